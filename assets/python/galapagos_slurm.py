"""Galapagos Slurm runner: evaluates one candidate inside a Slurm job or job
step, on whatever node the scheduler chose.

Started by the Rust `SlurmEvaluator` as `python3 galapagos_slurm.py DIR`
(a job per candidate), or as `python3 galapagos_slurm.py --standby
EVALUATOR TASK_DIR` (a job step of the pool started ahead of its candidate:
it imports everything, then reads DIR from stdin). DIR (on a file system the
node sees) holds `request.json`:
  {"evaluator": path, "task_dir": path, "program": path,
   "cascade": bool, "thresholds": [float, ...]}
It writes, each through a temporary file and a rename:
  DIR/started.json  {"job": str, "step": str | null, "node": str, "pid": int}
                    as soon as it runs (the run's clock starts here; a
                    requeued job writes it again)
  DIR/result.json   the evaluator's result in the worker's format (see
                    `Normalised.to_json` in galapagos_worker.py), or
                    {"error": ..., "import_failed": true, "artifacts": {...}}
                    when evaluator.py cannot be imported.
The candidate's own output goes to DIR/stdout and DIR/stderr (Slurm's output
files of a job; files the standby opens itself), which the run reads. The run decides validity (one rule, in
Rust); this script only reports what the evaluator returned.

Only the standard library and galapagos_worker.py (beside this file) are used.
"""

import json
import os
import socket
import sys


def write_json(path, obj):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, allow_nan=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load(request):
    """The worker module and evaluator.py imported, or the import's error."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import galapagos_worker as worker

    # The worker keeps fd 1 for its protocol and points it at stderr; here
    # the candidate's prints belong on the job's stdout.
    os.dup2(worker.PROTO.fileno(), 1)
    # The task folder and the candidates get no bytecode files written.
    sys.dont_write_bytecode = True
    try:
        return worker, worker.load_evaluator(request["evaluator"], request["task_dir"]), None
    except BaseException as exc:
        return worker, None, worker.format_exception(exc)


def started(work):
    write_json(os.path.join(work, "started.json"), {
        "job": os.environ.get("SLURM_JOB_ID", ""),
        "step": os.environ.get("SLURM_STEP_ID"),
        "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
        "pid": os.getpid(),
    })


def evaluate(work, request, worker, module, failure):
    result_path = os.path.join(work, "result.json")
    if failure is not None:
        error, text = failure
        write_json(result_path, {"error": f"cannot import evaluator.py: {error}",
                                 "artifacts": {"traceback": text}, "import_failed": True})
        return
    result = worker.run_evaluation(module, request["program"], bool(request.get("cascade")),
                                   list(request.get("thresholds") or []))
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        write_json(result_path, result.to_json())
    except ValueError:
        # A non-finite number the worker's format did not tag.
        write_json(result_path, {"error": "the evaluator returned a value that is not JSON"})


def read_request(work):
    with open(os.path.join(work, "request.json"), encoding="utf-8") as f:
        return json.load(f)


def standby(evaluator, task_dir):
    """Import everything, then wait for one candidate's folder on stdin; its
    output goes to that folder's stdout and stderr files."""
    worker, module, failure = load({"evaluator": evaluator, "task_dir": task_dir})
    line = sys.stdin.readline().strip()
    if not line:
        return
    work = os.path.abspath(line)
    request = read_request(work)
    started(work)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        out = os.open(os.path.join(work, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, fd)
        os.close(out)
    evaluate(work, request, worker, module, failure)


def main():
    if sys.argv[1] == "--standby":
        standby(sys.argv[2], sys.argv[3])
        return
    work = os.path.abspath(sys.argv[1])
    request = read_request(work)
    started(work)
    worker, module, failure = load(request)
    evaluate(work, request, worker, module, failure)


if __name__ == "__main__":
    main()
