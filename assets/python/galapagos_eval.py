"""Run a candidate program's code apart from the evaluator that scores it.

An evaluator that imports the candidate and calls it in its own process
gives the candidate its checking functions, its data, `builtins`, numpy and
`sys.modules` to rewrite: a candidate can replace the overlap check and
score an invalid answer as valid. With this module the candidate's code
runs in a process of its own and only plain data comes back:

    import galapagos_eval

    centers, radii = galapagos_eval.run(program_path, "run_packing", timeout=30)

    def search_all(module, seeds):            # runs in the candidate's process
        return [module.run_search(seed) for seed in seeds]
    points = galapagos_eval.run_with(program_path, search_all, SEEDS, timeout=30)

What comes back is JSON-compatible data (None, bools, ints, floats,
strings, lists, dicts with string keys; tuples arrive as lists) and numeric
numpy arrays (bool, int, uint, float dtypes), which arrive as numpy arrays
when numpy can be imported here and as nested lists otherwise. NaN and
infinities arrive as floats: check them as any other value. Anything else
(an object, a float subclass, a pickle) is refused: nothing is unpickled,
nothing the candidate sends is executed. When the candidate's code raises,
crashes, is killed (a limit), overruns `timeout`, closes or garbles its
result channel or returns something that is not plain data, `run` raises
`CandidateError`, whose message says which; an evaluator can let it
propagate (the candidate is then invalid, with that message) or catch it.

How the candidate's process is kept apart (Linux; `fork`, so it starts from
the evaluator's imports in about a millisecond):
- it is a child of this process, in a process group of its own, killed
  with its group when the result is in, at the timeout, and when this
  process dies (parent-death signal);
- it holds no descriptor of this process but the standard streams (stdin
  from /dev/null) and the write end of a fresh pipe for its result: not the
  run's result channel, nor any other pipe or socket, nor any result pipe
  of another call;
- no memory is shared: shared mappings inherited from this process are
  unmapped before the candidate's code is loaded; the rest is a
  copy-on-write copy, so what the candidate changes in the evaluator's
  modules, in `builtins` or in numpy stays in its own process;
- it cannot reach back: this process is made non-dumpable (no ptrace, no
  /proc/<pid>/mem, no pidfd_getfd from a process of the same user without
  privileges), and where the kernel has Landlock the candidate is put in a
  Landlock domain of its own (no ptrace of, signals to, or abstract unix
  sockets shared with processes outside it);
- its result is length-prefixed JSON, at most `max_bytes`, parsed strictly
  (no duplicate keys, only the shapes above).

The candidate can read whatever the evaluator holds in memory (a fork copies
it) and what the evaluator's files say: keep hidden reference data out of
reach by other means if its secrecy matters. What this module protects is
the score: the evaluator's checks run on data the candidate cannot change
after it is sent.

Only the standard library is used (numpy when present, for arrays).
"""

import base64
import json
import os
import select
import signal
import sys
import time

__all__ = ["CandidateError", "run", "run_with", "DEFAULT_TIMEOUT", "DEFAULT_MAX_BYTES"]

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_BYTES = 64 << 20
HEADER = 8  # bytes of big-endian length before the result
TRACEBACK_LIMIT = 20_000
ARRAY_KEY = "__ndarray__"
HERE = os.path.abspath(__file__)
MAX_DEPTH = 200

# dtype name -> (struct code, item size) of the numeric arrays that may cross.
DTYPES = {
    "bool": ("?", 1),
    "int8": ("b", 1), "int16": ("h", 2), "int32": ("i", 4), "int64": ("q", 8),
    "uint8": ("B", 1), "uint16": ("H", 2), "uint32": ("I", 4), "uint64": ("Q", 8),
    "float16": ("e", 2), "float32": ("f", 4), "float64": ("d", 8),
}

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_ACCESS_FS_REFER = 1 << 13


class CandidateError(Exception):
    """The candidate's code did not hand back plain data: it raised, crashed,
    was killed, overran its time, or returned something else. The message
    says which (and, when it raised, ends with its traceback)."""


class _NotData(Exception):
    pass


# --------------------------------------------------------------- public API


def run(program_path, entry, *args, timeout=DEFAULT_TIMEOUT, max_bytes=DEFAULT_MAX_BYTES, fresh=None, **kwargs):
    """Load the program at `program_path` in a process of its own, call its
    function `entry` with `args` and `kwargs`, and return what it returned
    (plain data, see the module docs). Raises `CandidateError`.

    `fresh` (default: when the task has hidden paths, see `hidden_paths`):
    the process is a fresh interpreter rather than a fork of this one, so it
    holds nothing of the evaluator's memory, and the task's hidden paths
    cannot be read in it; `args` and `kwargs` must then be plain data."""
    if _fresh(fresh):
        target = {"entry": entry}
        return _run_fresh(program_path, target, args, kwargs, f"{entry}()", timeout, max_bytes)

    def call(module):
        fn = getattr(module, entry, None)
        if not callable(fn):
            raise _Refused(f"the program defines no {entry}() function")
        return fn(*args, **kwargs)

    return _run(program_path, call, f"{entry}()", timeout, max_bytes)


def run_with(program_path, harness, *args, timeout=DEFAULT_TIMEOUT, max_bytes=DEFAULT_MAX_BYTES, what=None,
             fresh=None):
    """Load the program at `program_path` in a process of its own and return
    what `harness(module, *args)` returns there (plain data). `harness` is
    the evaluator's own function (it may call several of the program's
    functions, feed them an objective, time them); it runs with the
    candidate, so nothing it computes is to be trusted: check its result
    here. `what` names it in error messages (default: its name with "()").
    Raises `CandidateError`.

    `fresh` as for `run`: the harness must then be a function defined at the
    top level of its module (the fresh interpreter imports that module from
    its file, without the hidden paths, and calls it), and `args` plain data."""
    what = what or f"{getattr(harness, '__name__', 'the harness')}()"
    if _fresh(fresh):
        module = sys.modules.get(getattr(harness, "__module__", None) or "")
        name = getattr(harness, "__qualname__", "")
        source = getattr(module, "__file__", None)
        if not source or not name or "." in name or getattr(module, name, None) is not harness:
            raise ValueError(
                f"run_with in a fresh interpreter needs a harness defined at the top level of a module file; "
                f"{what} is not one"
            )
        target = {"harness": name, "module": os.path.abspath(source)}
        return _run_fresh(program_path, target, args, {}, what, timeout, max_bytes)
    return _run(program_path, lambda module: harness(module, *args), what, timeout, max_bytes)


HIDDEN_ENV = "GALAPAGOS_HIDDEN"


def hidden_paths():
    """The task's hidden paths (absolute), as the run hands them to the
    evaluator (a task's `hidden/` folder and the `hidden:` globs of its
    config.yaml): files the evaluator reads and candidates must not."""
    text = os.environ.get(HIDDEN_ENV)
    if not text:
        return []
    try:
        paths = json.loads(text)
    except ValueError:
        raise RuntimeError(f"{HIDDEN_ENV} is not a JSON list of paths") from None
    if not isinstance(paths, list) or not all(isinstance(p, str) and os.path.isabs(p) for p in paths):
        raise RuntimeError(f"{HIDDEN_ENV} is not a JSON list of absolute paths")
    return paths


def _fresh(fresh):
    return bool(hidden_paths()) if fresh is None else bool(fresh)


class _Refused(Exception):
    """Raised in the candidate's process for a problem that is the
    program's, reported without a traceback of this module."""


# ---------------------------------------------------------- the caller side


def _open_libc():
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return libc
    except Exception:
        return None


_LIBC = []


def _lib():
    if not _LIBC:
        _LIBC.append(_open_libc() if sys.platform.startswith("linux") else None)
    return _LIBC[0]


def _run(program_path, call, what, timeout, max_bytes):
    if timeout is None or not timeout > 0:
        raise ValueError("timeout must be a positive number of seconds")
    program_path = os.path.abspath(os.fspath(program_path))
    lib = _lib()
    if lib is not None:
        # Nothing of the same user without privileges may ptrace this
        # process or open its /proc/<pid>/mem (the candidate included).
        lib.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    read_end, write_end = os.pipe()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(read_end)
        os.close(write_end)
        raise CandidateError(f"cannot start a process for {what}: {exc}") from exc
    if pid == 0:
        try:
            os.close(read_end)
            _child(parent, write_end, program_path, call, what)
        finally:
            os._exit(70)
    os.close(write_end)
    try:
        os.setpgid(pid, pid)  # the child does it too; whichever runs first
    except OSError:
        pass
    try:
        return _collect(pid, read_end, what, time.monotonic() + float(timeout), timeout, max_bytes)
    finally:
        os.close(read_end)
        _end(pid)


# What starts the candidate's fresh interpreter: this module, from its file
# (`-I`: no environment variables, no user site, no current dir on the path).
_FRESH_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); import galapagos_eval; "
               "galapagos_eval._fresh_main(int(sys.argv[2]), int(sys.argv[3]))")

# The fresh interpreter's whole environment (the evaluator's holds nothing
# it needs), with the values this process has.
_FRESH_ENV = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def _run_fresh(program_path, target, args, kwargs, what, timeout, max_bytes):
    if timeout is None or not timeout > 0:
        raise ValueError("timeout must be a positive number of seconds")
    try:
        request = {
            "program": os.path.abspath(os.fspath(program_path)),
            "target": target,
            "args": _encode(list(args), "an argument", 0),
            "kwargs": _encode(dict(kwargs), "an argument", 0),
            "hidden": hidden_paths(),
            "what": what,
        }
    except _NotData as exc:
        raise ValueError(f"a fresh interpreter takes plain data only: {what} was given {exc}") from None
    lib = _lib()
    if lib is not None:
        lib.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    data = json.dumps(request).encode("utf-8")
    request_r, request_w = os.pipe()
    read_end, write_end = os.pipe()
    env = {k: os.environ[k] for k in _FRESH_ENV if k in os.environ}
    argv = [sys.executable, "-I", "-c", _FRESH_BOOT, os.path.dirname(HERE), str(os.getpid()), str(write_end)]
    os.set_inheritable(write_end, True)
    try:
        pid = os.posix_spawn(sys.executable, argv, env, setpgroup=0,
                             file_actions=[(os.POSIX_SPAWN_DUP2, request_r, 0)])
    except OSError as exc:
        for fd in (request_r, request_w, read_end, write_end):
            os.close(fd)
        raise CandidateError(f"cannot start a fresh interpreter for {what}: {exc}") from exc
    os.close(request_r)
    os.close(write_end)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(request_w, view):]
        except OSError:
            pass  # it ended before reading: its result channel says how
        finally:
            os.close(request_w)
        return _collect(pid, read_end, what, time.monotonic() + float(timeout), timeout, max_bytes)
    finally:
        os.close(read_end)
        _end(pid)


def _end(pid):
    """Kill the candidate's process and its group, and reap it."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _read_exactly(fd, count, deadline):
    """`count` bytes from `fd`, fewer at end of file; None at the deadline."""
    out = bytearray()
    while len(out) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, min(count - len(out), 1 << 20))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def _collect(pid, fd, what, deadline, timeout, max_bytes):
    late = CandidateError(f"{what} did not return within {timeout:g} s (its process was killed)")
    head = _read_exactly(fd, HEADER, deadline)
    if head is None:
        raise late
    if len(head) < HEADER:
        raise CandidateError(_ended_without_result(pid, what, deadline))
    length = int.from_bytes(head, "big")
    if length > max_bytes:
        raise CandidateError(
            f"{what} returned {length} bytes of data, more than the {max_bytes}-byte limit "
            "(run(..., max_bytes=...) raises it)"
        )
    body = _read_exactly(fd, length, deadline)
    if body is None:
        raise late
    if len(body) < length:
        raise CandidateError(_ended_without_result(pid, what, deadline))
    message = _parse(body, what)
    if "ok" in message:
        return message["ok"]
    if "refused" in message:
        raise CandidateError(_text(message["refused"]))
    raised = message["raised"]
    name = _text(raised.get("type"))[:100]
    error = CandidateError(
        f"{what} raised {name}: {_text(raised.get('message'))[:2000]}\n\n"
        f"In the candidate's process:\n{_text(raised.get('traceback'))[:TRACEBACK_LIMIT]}"
    )
    limit = raised.get("limit")
    if limit == "memory":
        raise error from MemoryError(f"{what} ran out of memory")
    if limit == "file_size":
        import errno

        raise error from OSError(errno.EFBIG, f"{what} wrote a file over the size limit")
    if limit == "space":
        import errno

        raise error from OSError(errno.ENOSPC, f"{what} filled its writable space")
    raise error


def _text(value):
    return value if isinstance(value, str) else ""


def _ended_without_result(pid, what, deadline):
    """How the candidate's process ended, having closed its result channel
    without a whole result (it is killed if it is still running)."""
    status = usage = None
    while time.monotonic() < deadline:
        try:
            done, status, usage = os.wait4(pid, os.WNOHANG)
        except ChildProcessError:
            break
        if done:
            break
        status = None
        time.sleep(0.002)
    if status is None:
        return f"{what}'s process closed its result channel without returning a result (it was killed)"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        cpu = usage.ru_utime + usage.ru_stime
        if sig == signal.SIGKILL and _at_cpu_limit(cpu):
            return f"{what}'s process was killed at its CPU time limit (SIGXCPU, then SIGKILL) after {cpu:.1f} s"
        return f"{what}'s process was killed by {name}"
    return f"{what}'s process exited with status {os.WEXITSTATUS(status)} without returning a result"


def _at_cpu_limit(cpu):
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
    except (ImportError, OSError, ValueError):
        return False
    return soft != resource.RLIM_INFINITY and cpu + 0.5 >= soft


# ------------------------------------------------------------- strict parse


def _unique_keys(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _parse(body, what):
    garbled = f"{what}'s process sent a garbled result"
    try:
        message = json.loads(body.decode("utf-8"), object_pairs_hook=_unique_keys)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CandidateError(f"{garbled} ({str(exc)[:200]})") from None
    if not isinstance(message, dict) or len(message) != 1:
        raise CandidateError(garbled)
    (kind, value), = message.items()
    if kind == "ok":
        try:
            return {"ok": _decode(value, 0)}
        except _NotData as exc:
            raise CandidateError(f"{garbled} ({exc})") from None
    if kind == "refused" and isinstance(value, str):
        return message
    if kind == "raised" and isinstance(value, dict):
        return message
    raise CandidateError(garbled)


def _decode(value, depth):
    if depth > MAX_DEPTH:
        raise _NotData(f"nested deeper than {MAX_DEPTH}")
    if isinstance(value, list):
        return [_decode(v, depth + 1) for v in value]
    if isinstance(value, dict):
        if ARRAY_KEY in value:
            return _decode_array(value)
        return {k: _decode(v, depth + 1) for k, v in value.items()}
    return value


def _decode_array(tagged):
    if set(tagged) != {ARRAY_KEY, "dtype", "shape"}:
        raise _NotData("an array with unexpected fields")
    dtype, shape, data = tagged["dtype"], tagged["shape"], tagged[ARRAY_KEY]
    if dtype not in DTYPES or not isinstance(data, str) or not isinstance(shape, list) or len(shape) > 32:
        raise _NotData("an array of an unknown dtype or shape")
    if not all(type(n) is int and n >= 0 for n in shape):
        raise _NotData("an array with a bad shape")
    count = 1
    for n in shape:
        count *= n
    code, size = DTYPES[dtype]
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise _NotData("an array whose data is not base64") from None
    if len(raw) != count * size:
        raise _NotData(f"an array of shape {shape} with {len(raw)} bytes of {dtype}")
    np = _numpy()
    if np is not None:
        return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)
    import struct

    flat = list(struct.unpack(f"<{count}{code}", raw))
    return _nest(flat, shape)


def _nest(flat, shape):
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _numpy():
    np = sys.modules.get("numpy")
    if np is not None:
        return np
    try:
        import numpy as np
    except ImportError:
        return None
    return np


# ------------------------------------------------------ the candidate side


def _child(parent, fd, program_path, call, what):
    """In the candidate's process: cut it off from the evaluator, load the
    program, call it, send the result. Never returns."""
    try:
        os.setpgid(0, 0)
        lib = _lib()
        if lib is not None:
            lib.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(70)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        try:
            signal.set_wakeup_fd(-1)
        except (ValueError, OSError):
            pass
        fd = _only_descriptors(fd)
        _unmap_shared(lib)
        _own_landlock_domain(lib)
    except BaseException as exc:
        _send(fd, {"refused": f"the candidate's process could not be set apart: {exc}"})
        os._exit(0)
    _call_and_send(fd, program_path, call, what)


def _fresh_main(parent, fd):
    """In the candidate's fresh interpreter: read the request on stdin, cut
    the process off (as `_child` does, and with the hidden paths out of
    reach), load the program, call it, send the result. Never returns."""
    try:
        lib = _lib()
        if lib is not None:
            lib.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(70)
        chunks = []
        while True:
            chunk = os.read(0, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        request = json.loads(b"".join(chunks).decode("utf-8"))
        fd = _only_descriptors(fd)
        _own_landlock_domain(lib, hidden=request["hidden"])
        args = _decode(request["args"], 0)
        kwargs = _decode(request["kwargs"], 0)
        target = request["target"]
        what = request["what"]
    except BaseException as exc:
        _send(fd, {"refused": f"the candidate's process could not be set apart: {exc}"})
        os._exit(0)
    if "entry" in target:
        entry = target["entry"]

        def call(module):
            fn = getattr(module, entry, None)
            if not callable(fn):
                raise _Refused(f"the program defines no {entry}() function")
            return fn(*args, **kwargs)
    else:
        def call(module):
            import importlib.util

            spec = importlib.util.spec_from_file_location("galapagos_harness", target["module"])
            harness_module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(harness_module)
            return getattr(harness_module, target["harness"])(module, *args, **kwargs)
    _call_and_send(fd, request["program"], call, what)


def _call_and_send(fd, program_path, call, what):
    try:
        module = _load(program_path)
        message = {"ok": _encode(call(module), "result", 0)}
    except _Refused as exc:
        message = {"refused": str(exc)}
    except _NotData as exc:
        message = {"refused": f"{what} returned {exc}, which is not plain data "
                              "(JSON values and numeric arrays only)"}
    except BaseException as exc:  # SystemExit from the candidate too
        try:
            message = {"raised": _describe(exc)}
        except BaseException:  # an exception whose text cannot be taken
            message = {"raised": {"type": type(exc).__name__, "message": "", "traceback": "", "limit": None}}
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    _send(fd, message)
    os._exit(0)


def _send(fd, message):
    try:
        data = json.dumps(message).encode("utf-8")
    except (TypeError, ValueError) as exc:
        data = json.dumps({"refused": f"the result could not be encoded ({exc})"}).encode("utf-8")
    view = memoryview(len(data).to_bytes(HEADER, "big") + data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass


def _only_descriptors(fd):
    """Close every descriptor but the standard streams and `fd` (moved to 3);
    stdin from /dev/null. The result channel's new number."""
    if fd != 3:
        os.dup2(fd, 3)
        os.close(fd)
        fd = 3
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    if null > 3:
        os.close(null)
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        names = [str(n) for n in range(4, 4096)]
    for name in names:
        n = int(name)
        if n > 3:
            try:
                os.close(n)
            except OSError:
                pass
    return fd


def _unmap_shared(lib):
    """Unmap every shared mapping (memory a process outside this one may
    also see or write)."""
    if lib is None:
        return
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return
    import ctypes

    for line in lines:
        # "start-end perms offset ...": perms end in "s" for a shared mapping.
        space = line.find(" ")
        if line[space + 4:space + 5] != "s":
            continue
        start, end = (int(x, 16) for x in line[:space].split("-"))
        if lib.munmap(ctypes.c_void_p(start), ctypes.c_size_t(end - start)) != 0:
            raise OSError(ctypes.get_errno(), f"cannot unmap the shared mapping {line.strip()}")


# Landlock's file access rights used to hide paths.
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_TRUNCATE = 1 << 14


# Making and removing entries (a dir, a file, a socket, a fifo, a link).
_FS_CHANGE_DIR = (1 << 4) | (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 12)


def _hiding(abi):
    """The rights a domain that hides paths handles, and grants everywhere
    else (on a dir, on a file)."""
    on_file = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
    return on_file | _FS_READ_DIR | _FS_CHANGE_DIR, on_file


def _visible(hidden):
    """The fewest paths whose trees hold everything but `hidden` (absolute
    paths, as they are and resolved): every path beside a hidden one, on the
    way down from /."""
    hidden = {os.path.normpath(h) for h in hidden} | {os.path.realpath(h) for h in hidden}
    out = []

    def cover(path):
        if path in hidden:
            return
        prefix = path.rstrip("/") + "/"
        if not any(h.startswith(prefix) for h in hidden):
            out.append(path)
            return
        try:
            names = os.listdir(path)
        except OSError:
            return
        for name in names:
            cover(os.path.join(path, name))

    cover("/")
    return out


def _own_landlock_domain(lib, hidden=None):
    """A Landlock domain of the candidate's own, where the kernel has
    Landlock: it cannot ptrace (or read the memory of) any process outside
    it, nor, from ABI 6, signal one or share its abstract unix sockets. With
    `hidden` (paths), those cannot be read, listed, run or written either
    (the dirs above them cannot be listed), and without Landlock this
    raises: hidden paths are never left readable."""
    if lib is None:
        if hidden:
            raise OSError("hidden paths need Landlock (Linux 5.13 or newer), which this system lacks")
        return
    import ctypes

    class Attr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    abi = lib.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        if hidden:
            raise OSError("hidden paths need Landlock (Linux 5.13 or newer), which this kernel lacks")
        return
    # Handled: making device nodes (nobody needs to), and moving files
    # between directories, which a domain refuses unless a rule allows it
    # (allowed everywhere below); everything else stays as this process's
    # own domain, if any, allows it.
    on_dir, on_file = _hiding(abi)
    attr = Attr((1 << 6) | (1 << 11) | moving_files(abi) | (on_dir if hidden else 0), 0, 0)
    size = 8
    if abi >= 4:
        size = 16
    if abi >= 6:
        size = 24
        attr.scoped = (1 << 0) | (1 << 1)
    if lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "no_new_privs")
    ruleset = lib.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                          ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        allow_moving_files(lib, ruleset, abi)
        if hidden:
            _allow_all_but(lib, ruleset, hidden, on_dir, on_file)
        if lib.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow_all_but(lib, ruleset, hidden, on_dir, on_file):
    """Rules granting `on_dir` beneath every visible dir and `on_file` on
    every visible file (see `_visible`)."""
    import ctypes
    import stat

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    for path in _visible(hidden):
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                continue  # what it points at is granted (or not) where it lives
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue  # gone
        try:
            mode = os.fstat(fd).st_mode
            rule = PathBeneath(on_dir if stat.S_ISDIR(mode) else on_file, fd)
            if lib.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                           ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
        finally:
            os.close(fd)


def moving_files(abi):
    """The access right a Landlock ruleset must handle so that
    `allow_moving_files` can grant it (none before ABI 2)."""
    return LANDLOCK_ACCESS_FS_REFER if abi >= 2 else 0


def allow_moving_files(lib, ruleset, abi):
    """From ABI 2 on, every Landlock domain refuses to move a file to another
    directory (rename, link: EXDEV) unless a rule allows it. Compilers and
    package tools do that all the time (rustc renames each .rmeta into
    place), so one rule on / allows it everywhere. `ruleset` must handle
    `moving_files(abi)`; `lib` is libc (ctypes, with errno)."""
    if abi < 2:
        return
    import ctypes

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    root = os.open("/", os.O_PATH | os.O_CLOEXEC)
    try:
        rule = PathBeneath(LANDLOCK_ACCESS_FS_REFER, root)
        if lib.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                       ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_add_rule")
    finally:
        os.close(root)


def _load(program_path):
    import importlib.util

    if os.path.isdir(program_path):
        # A repository task's program: its folder comes first on sys.path,
        # so the harness imports the program's modules by name; the module
        # handed to it stands for the folder.
        import types

        sys.path.insert(0, program_path)
        module = types.ModuleType("candidate_program")
        module.__path__ = [program_path]
        module.__file__ = program_path
        sys.modules["candidate_program"] = module
        return module
    spec = importlib.util.spec_from_file_location("candidate_program", program_path)
    if spec is None or spec.loader is None:
        raise _Refused(f"cannot load {program_path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate_program"] = module
    spec.loader.exec_module(module)
    return module


def _describe(exc):
    import traceback

    te = traceback.TracebackException.from_exception(exc)
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if os.path.abspath(f.filename) != HERE])
    text = "".join(te.format())
    if len(text) > TRACEBACK_LIMIT:
        text = text[:TRACEBACK_LIMIT // 2] + "\n...\n" + text[-TRACEBACK_LIMIT // 2:]
    return {"type": type(exc).__name__, "message": str(exc)[:2000], "traceback": text, "limit": _limit(exc)}


def _limit(exc):
    """"memory", "file_size" or "space" (the writable-space quota) when the
    exception comes from hitting that limit, else None."""
    import errno

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, MemoryError):
            return "memory"
        if isinstance(exc, OSError) and exc.errno in (errno.EFBIG, errno.ENOMEM):
            return "file_size" if exc.errno == errno.EFBIG else "memory"
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return "space"
        exc = exc.__cause__ or exc.__context__
    return None


def _encode(value, where, depth):
    """`value` as JSON-compatible data (numeric arrays tagged); `_NotData`
    naming where the first thing that is not data is."""
    if depth > MAX_DEPTH:
        raise _NotData(f"data nested deeper than {MAX_DEPTH} (at {where})")
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind in (list, tuple):
        return [_encode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotData(f"a dict key of type {type(key).__name__} (at {where})")
            if key == ARRAY_KEY:
                raise _NotData(f"the reserved key {ARRAY_KEY!r} (at {where})")
            out[key] = _encode(item, f"{where}[{key!r}]", depth + 1)
        return out
    np = sys.modules.get("numpy")
    if np is not None:
        if kind is np.ndarray:
            if value.dtype.name not in DTYPES:
                raise _NotData(f"a numpy array of dtype {value.dtype.name} (at {where})")
            little = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False)
            return {ARRAY_KEY: base64.b64encode(little.tobytes()).decode("ascii"),
                    "dtype": value.dtype.name, "shape": [int(n) for n in value.shape]}
        if isinstance(value, np.generic) and type(value).__module__ == "numpy" \
                and value.dtype.name in DTYPES:
            return value.item()
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    raise _NotData(f"a value of type {name} (at {where})")
