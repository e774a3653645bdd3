"""Galapagos Slurm runner: evaluates one candidate inside a Slurm job or job
step, on whatever node the scheduler chose, in the same sandbox the local
evaluators use where the node has it.

Started by the Rust `SlurmEvaluator` as `python3 -S galapagos_slurm.py --job
CONFIG DIR` (a job per candidate), or as `python3 -S galapagos_slurm.py
--standby CONFIG` (a job step of the pool started ahead of its candidate:
it sets everything up, then reads DIR from stdin). CONFIG is the run's
`runner.json`:
  {"evaluator": path, "task_dir": path, "suffix": ".py",
   "limits": {...} (see `apply_limits` in galapagos_worker.py),
   "output_bytes": int (bytes of each of stdout and stderr kept),
   "env": [[name, value], ...] (the candidates' environment, an allowlist),
   "node_env": [name, ...] (taken from the node's environment when set
   there: GPU selection, the job's own SLURM_* facts),
   "sandbox": null (sandbox: none) or {"options": [...] (bubblewrap's
   options, src/engine/sandbox/bwrap.rs's), "hidden": [dir, ...] (the dirs they
   hide), "network": bool, "as_user": [...] (when the job runs as root:
   the command that starts the evaluation process as nobody in a user
   namespace of its own)}}
DIR (on a file system the node sees) holds `request.json` ({"program":
path, "id": int, "cascade": bool, "thresholds": [float, ...], "folder":
bool}) and the program: one file, or with "folder" a folder (a repository
program's tree, written there by the run), whose files the evaluation
process gets on its pipe and writes into a folder of its own scratch dir,
the path `evaluate` receives.

Two processes. This one, the supervisor, runs outside the sandbox: it
starts the evaluation process (`--inside`) in bubblewrap (with the node's
GPU devices and interpreter dirs added to the run's options), hands it the
candidate, copies its output into DIR/stdout and DIR/stderr (the first and
last halves of `output_bytes` of each), and writes, each through a
temporary file and a rename:
  DIR/started.json  {"job": str, "step": str | null, "node": str, "pid": int}
                    as soon as it takes the candidate (the run's clock
                    starts here; a requeued job writes it again)
  DIR/result.json   the evaluator's result in the worker's format (see
                    `Normalised.to_json` in galapagos_worker.py), or
                    {"error": ..., "import_failed": true} when evaluator.py
                    cannot be imported, {"error": ..., "setup_failed": true}
                    when the sandbox cannot be set up on this node, or
                    {"status": wait status, "cpu": seconds} when the
                    evaluation process ended without a result; with
                    "output": {"stdout": [head bytes, total bytes], ...}.
The evaluation process sees none of DIR: it gets the request and the
program on its stdin and sends its result back on a pipe, so nothing a
candidate runs can write a result file. The run decides validity (one rule,
in Rust); this script only reports what the evaluator returned.

Only the standard library and the worker's modules (beside this file) are
used.
"""

import json
import os
import select
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NODE = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
INSTALL = (
    "install it there (Debian, Ubuntu: `apt-get install bubblewrap`; RHEL, Rocky, Fedora: `dnf install "
    "bubblewrap`; the nodes must also allow unprivileged user namespaces), or set the evaluator's "
    "`sandbox: none` to run candidates on the nodes without a sandbox"
)

SANDBOX_HINT = (
    "bubblewrap needs unprivileged user namespaces on the node (`sysctl kernel.unprivileged_userns_clone=1` where "
    "that exists; on Ubuntu 23.10 and later an AppArmor rule for bwrap, see the README's Security model), or set the "
    "evaluator's `sandbox: none` to run candidates on the nodes without a sandbox"
)


def write_json(path, obj):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, allow_nan=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def started(work):
    write_json(os.path.join(work, "started.json"), {
        "job": os.environ.get("SLURM_JOB_ID", ""),
        "step": os.environ.get("SLURM_STEP_ID"),
        "node": NODE,
        "pid": os.getpid(),
    })


# ------------------------------------------------------------ supervisor


def find_bwrap():
    for d in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(d, "bwrap")
        if d and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def gpu_devices():
    try:
        names = sorted(os.listdir("/dev"))
    except OSError:
        return []
    return ["/dev/" + n for n in names if n.startswith("nvidia") or n in ("dri", "kfd")]


def interpreter_dirs():
    """Where this interpreter (the node's) reads its standard library and
    packages from."""
    exe = sys.executable
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
            os.path.dirname(exe), os.path.dirname(os.path.realpath(exe))}
    venv = os.path.dirname(os.path.dirname(exe))
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        dirs.add(venv)
    dirs |= {os.path.realpath(d) for d in list(dirs) if d}
    return sorted(d for d in dirs if d and os.path.isabs(d) and d != "/")


def ancestors(path):
    """The dirs above `path`, without `/`."""
    out = []
    while True:
        path = os.path.dirname(path)
        if path in ("/", ""):
            return out
        out.append(path)


def under(path, dirs):
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def bwrap_command(bwrap, sandbox, inner):
    """The run's bubblewrap options with what only this node knows: hidden
    dirs it does not have left out, its GPU devices passed in, and its
    interpreter's dirs shown again (read-only) where a hidden dir covers
    them."""
    options = list(sandbox["options"])
    if options and options[-1] == "--":
        options.pop()
    hidden = [d for d in sandbox["hidden"] if os.path.isdir(d)]
    missing = set(sandbox["hidden"]) - set(hidden)
    out = []
    i = 0
    while i < len(options):
        if options[i] in ("--tmpfs", "--remount-ro") and i + 1 < len(options) and options[i + 1] in missing:
            i += 2
            continue
        out.append(options[i])
        i += 1
    at = next((k + 2 for k in range(len(out) - 1) if out[k] == "--dev" and out[k + 1] == "/dev"), len(out))
    out[at:at] = [a for d in gpu_devices() for a in ("--dev-bind-try", d, d)]
    shown = [d for d in interpreter_dirs() if under(d, hidden)]
    binds = [a for d in shown for a in ("--ro-bind-try", d, d)]
    if sandbox.get("as_user"):
        # The evaluation process runs as nobody: the dirs bubblewrap makes
        # on the way to these binds (owner-only otherwise) must let it pass.
        passes = sorted({a for d in shown for a in ancestors(d)
                         if under(a, hidden) and a not in hidden and not under(a, shown)})
        binds = [x for a in passes for x in ("--perms", "0755", "--dir", a)] + binds
    at = out.index("--remount-ro") if "--remount-ro" in out else len(out)
    out[at:at] = binds
    return [bwrap, *out, "--", *inner]


class Output:
    """What the evaluation process writes to one stream: its first and last
    `limit / 2` bytes (the head goes to the file as it comes, once there is
    one), and how many bytes it wrote in all."""

    def __init__(self, limit):
        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.file = None

    def attach(self, path):
        self.file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(self.file, self.head)

    def push(self, chunk):
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            taken = chunk[:room]
            self.head += taken
            chunk = chunk[room:]
            if self.file is not None:
                os.write(self.file, taken)
        if chunk:
            self.tail += chunk
            del self.tail[:max(0, len(self.tail) - self.half)]

    def finish(self):
        """Write the tail; [head bytes, total bytes] for the result."""
        if self.file is not None:
            os.write(self.file, self.tail)
            os.close(self.file)
            self.file = None
        return [len(self.head), self.total]


class Evaluation:
    """The evaluation process (`--inside`), in the sandbox when the run has
    one: started at once, so that it is ready (evaluator.py imported) before
    its candidate comes."""

    def __init__(self, config):
        self.said = bytearray()  # what it sent on its result pipe
        self.open = {}  # fd -> where what it reads goes
        self.out = Output(int(config.get("output_bytes") or 20000))
        self.err = Output(int(config.get("output_bytes") or 20000))
        self.failure = None
        self.pid = None
        self.status = None
        self.cpu = None
        self.scratch = None
        sandbox = config.get("sandbox")
        self.sandboxed = sandbox is not None
        env = dict((k, v) for k, v in config.get("env") or [])
        for name in config.get("node_env") or []:
            if name in os.environ:
                env[name] = os.environ[name]
        if sandbox is None:
            # No sandbox: a scratch dir of its own on the node, removed after.
            import tempfile

            self.scratch = tempfile.mkdtemp(prefix="galapagos-")
            for name in ("home", "tmp"):
                os.mkdir(os.path.join(self.scratch, name), 0o700)
            env["HOME"] = os.path.join(self.scratch, "home")
            env["TMPDIR"] = os.path.join(self.scratch, "tmp")
        result_r, result_w = os.pipe()
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        # This file as a module (its bytecode cached by `compile_code`).
        launch = f"import sys; sys.path.insert(0, {HERE!r}); import galapagos_slurm; galapagos_slurm.main()"
        argv = [sys.executable, "-c", launch, "--inside", str(result_w)]
        if sandbox is not None:
            bwrap = find_bwrap()
            if bwrap is None:
                self.failure = (f"the sandbox needs bubblewrap (`bwrap`) on node {NODE}, where it is not on PATH: "
                                f"{INSTALL}")
                for fd in (result_r, result_w, in_r, in_w, out_r, out_w, err_r, err_w):
                    os.close(fd)
                return
            # As root (the job's user): the evaluation process as nobody.
            argv = bwrap_command(bwrap, sandbox, list(sandbox.get("as_user") or []) + argv)
        setup = {"evaluator": config["evaluator"], "task_dir": config["task_dir"],
                 "suffix": config.get("suffix", ".py"), "limits": config.get("limits") or {},
                 "sandboxed": sandbox is not None, "network": bool((sandbox or {}).get("network"))}
        # Its only descriptors: the three pipes as stdin, stdout and stderr,
        # and the result pipe (all others are close-on-exec). Its working
        # dir is this one's, the task folder (bubblewrap sets it again).
        os.set_inheritable(result_w, True)
        actions = [(os.POSIX_SPAWN_DUP2, in_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]
        try:
            self.pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
        except OSError as exc:
            self.failure = f"cannot start the evaluation on node {NODE}: {exc}"
        for fd in (result_w, in_r, out_w, err_w):
            os.close(fd)
        self.to_inner = in_w
        self.open = {result_r: self.said, out_r: self.out, err_r: self.err}
        if self.pid is None:
            return
        try:
            os.write(in_w, (json.dumps(setup) + "\n").encode())
        except OSError:
            pass

    def pump(self, timeout, extra=()):
        """Read what the process wrote, waiting at most `timeout`; the
        `extra` fds that are readable."""
        fds = list(self.open) + list(extra)
        if not fds:
            return []
        try:
            ready, _, _ = select.select(fds, [], [], timeout)
        except InterruptedError:
            return []
        for fd in ready:
            if fd not in self.open:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                os.close(fd)
                del self.open[fd]
            elif isinstance(self.open[fd], Output):
                self.open[fd].push(chunk)
            else:
                self.open[fd] += chunk
        return [fd for fd in ready if fd in extra]

    def ended(self):
        if self.pid is None:
            return True
        if self.status is None:
            try:
                pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False
            self.status = status
            self.cpu = usage.ru_utime + usage.ru_stime
        return True

    def wait(self):
        """Wait for the process's end (its pipes are closed already)."""
        try:
            _, status, usage = os.wait4(self.pid, 0)
        except ChildProcessError:
            self.status = self.status or 0
            return
        self.status = status
        self.cpu = usage.ru_utime + usage.ru_stime

    def answered(self):
        lines = self.lines()
        return any(line.get("import_failed") or line.get("setup_failed") for line in lines) or (
            len(lines) > 1 and bool(lines[0].get("ready")))

    def lines(self):
        out = []
        for line in bytes(self.said).split(b"\n"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def wait_for_candidate(self):
        """The candidate's folder from stdin (standby), reading the
        process's output meanwhile; None at end of file."""
        line = bytearray()
        while True:
            for _ in self.pump(1.0, (0,)):
                chunk = os.read(0, 4096)
                if not chunk:
                    return None
                line += chunk
                if b"\n" in line:
                    return os.path.abspath(bytes(line).split(b"\n")[0].decode().strip())

    def evaluate(self, work, request):
        """Hand the process its candidate and wait for its end; the result."""
        for output, name in ((self.out, "stdout"), (self.err, "stderr")):
            output.attach(os.path.join(work, name))
        if self.failure is None:
            if request.get("folder"):
                message = dict(request, files=read_folder(request["program"]))
            else:
                with open(request["program"], encoding="utf-8") as f:
                    message = dict(request, program_text=f.read())
            try:
                os.write(self.to_inner, (json.dumps(message) + "\n").encode())
            except OSError:
                pass
            # Until its result is in, or it ended without one. Then this
            # process need not wait for its end: bubblewrap dies with this
            # process, and its pid namespace with everything left in it.
            while not self.answered() and not self.ended():
                if self.open:
                    self.pump(0.05)
                else:
                    self.wait()
            # What it wrote just before it ended (a process it left behind
            # may hold its pipes open: no waiting for their end).
            for _ in range(1000):
                if not self._readable():
                    break
                self.pump(0)
        result = self.result()
        result["output"] = {"stdout": self.out.finish(), "stderr": self.err.finish()}
        if self.scratch is not None:
            import shutil

            shutil.rmtree(self.scratch, ignore_errors=True)
        return result

    def _readable(self):
        try:
            ready, _, _ = select.select(list(self.open), [], [], 0)
        except (InterruptedError, ValueError):
            return []
        return ready

    def result(self):
        if self.failure is not None:
            return {"error": self.failure, "setup_failed": True}
        lines = self.lines()
        for line in lines:
            if line.get("import_failed") or line.get("setup_failed"):
                return line
        if lines and lines[0].get("ready") and len(lines) > 1:
            return lines[1]
        if not lines:
            # It never got ready: bubblewrap or the interpreter could not
            # start, or evaluator.py's import killed the process.
            said = bytes(self.err.head + self.err.tail).decode("utf-8", "replace").strip().splitlines()
            last = said[-1] if said else f"wait status {self.status}"
            hint = f"; if the sandbox is what fails: {SANDBOX_HINT}" if self.sandboxed else ""
            return {"error": f"the evaluation cannot start on node {NODE}: {last}{hint}", "setup_failed": True}
        # The wait status as it is (bubblewrap reports a kill of its child
        # by signal N as exit status 128 + N: the run reads it so).
        return {"status": self.status, "cpu": self.cpu}


def read_folder(root):
    """A folder program as the worker's `write_folder` takes it: {"files":
    {path: text}, "binary": {path: base64}}, paths relative to `root` with
    `/` between parts. Links are not followed (the run writes none)."""
    import base64

    files, binary = {}, {}
    for here, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(here, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, "rb") as f:
                data = f.read()
            try:
                files[rel] = data.decode("utf-8")
            except UnicodeDecodeError:
                binary[rel] = base64.b64encode(data).decode("ascii")
    return {"files": files, "binary": binary}


def compile_code():
    """Compile the worker's modules beside them when their bytecode is
    missing (the evaluation process cannot write there in the sandbox)."""
    for name in ("galapagos_slurm", "galapagos_worker", "galapagos_sandbox", "galapagos_eval"):
        source = os.path.join(HERE, f"{name}.py")
        cached = os.path.join(HERE, "__pycache__", f"{name}.{sys.implementation.cache_tag}.pyc")
        if os.path.isfile(source) and not os.path.exists(cached):
            import py_compile

            try:
                py_compile.compile(source, cfile=cached, doraise=True)
            except (OSError, py_compile.PyCompileError):
                pass


def supervise(config_path, work):
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    compile_code()
    evaluation = Evaluation(config)
    if work is None:
        work = evaluation.wait_for_candidate()
        if work is None:
            return
    with open(os.path.join(work, "request.json"), encoding="utf-8") as f:
        request = json.load(f)
    started(work)
    result = evaluation.evaluate(work, request)
    try:
        write_json(os.path.join(work, "result.json"), result)
    except ValueError:
        # A non-finite number the worker's format did not tag.
        write_json(os.path.join(work, "result.json"), {"error": "the evaluator returned a value that is not JSON"})


# ------------------------------------------------- the evaluation process


def inside(result_fd):
    """Import evaluator.py, say so, then evaluate the one candidate that
    comes on stdin; the result goes on `result_fd`."""

    def send(obj):
        data = (json.dumps(obj, allow_nan=False) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view):]

    buffer = bytearray()

    def next_line():
        while b"\n" not in buffer:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                return None
            buffer.extend(chunk)
        end = buffer.index(b"\n")
        line = bytes(buffer[:end])
        del buffer[:end + 1]
        return json.loads(line)

    setup = next_line()
    if setup is None:
        return
    sys.path.insert(0, HERE)
    import galapagos_worker as worker

    # The worker keeps fd 1 for its protocol and points it at stderr; here
    # the candidate's prints belong on stdout.
    os.dup2(worker.PROTO.fileno(), 1)
    sys.dont_write_bytecode = True
    try:
        module = worker.load_evaluator(setup["evaluator"], setup["task_dir"])
    except BaseException as exc:
        error, text = worker.format_exception(exc)
        send({"error": f"cannot import evaluator.py: {error}", "artifacts": {"traceback": text},
              "import_failed": True})
        return
    if setup.get("sandboxed"):
        try:
            import galapagos_sandbox

            galapagos_sandbox.drop_privileges(bool(setup.get("network")))
        except OSError as exc:
            send({"error": f"cannot restrict the evaluation process on node {NODE}: {exc}", "setup_failed": True})
            return
    send({"ready": True})
    request = next_line()
    if request is None:
        return
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    limits = setup.get("limits") or {}
    try:
        worker.apply_limits(limits, isolated=bool(setup.get("sandboxed")), reused=True)
        cpu_limit(limits.get("cpu_secs"))
    except (OSError, ValueError) as exc:
        send({"error": f"cannot apply the evaluator's limits on node {NODE}: {exc}", "setup_failed": True})
        return
    scratch = os.environ.get("TMPDIR") or "/tmp"
    if request.get("files") is not None:
        # A folder program: its own writable copy, as the local worker makes.
        program = os.path.join(scratch, f"candidate_{int(request.get('id', 0))}")
        worker.write_folder(program, request["files"])
    else:
        program = os.path.join(scratch, f"candidate_{int(request.get('id', 0))}{setup.get('suffix', '.py')}")
        with open(program, "w", encoding="utf-8") as f:
            f.write(request.get("program_text", ""))
    result = worker.run_evaluation(module, program, bool(request.get("cascade")),
                                   list(request.get("thresholds") or []))
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    try:
        send(result.to_json())
    except ValueError:
        send({"error": "the evaluator returned a value that is not JSON"})


def cpu_limit(cpu_secs):
    """The candidate's CPU time, counted from now (the import's is not its
    own): SIGXCPU at the limit, SIGKILL a second later."""
    if cpu_secs is None:
        return
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = max(1, int(used.ru_utime + used.ru_stime + cpu_secs + 0.999))
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    top = soft + 1 if hard == resource.RLIM_INFINITY else min(soft + 1, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (min(soft, top), top))


def main():
    mode = sys.argv[1]
    if mode == "--inside":
        try:
            inside(int(sys.argv[2]))
        except BaseException:
            import traceback

            traceback.print_exc()
            os._exit(70)
        os._exit(0)
    elif mode == "--standby":
        supervise(sys.argv[2], None)
    elif mode == "--job":
        supervise(sys.argv[2], os.path.abspath(sys.argv[3]))
    else:
        sys.exit(f"galapagos_slurm.py: unknown mode {mode}")


if __name__ == "__main__":
    main()
