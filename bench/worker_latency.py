#!/usr/bin/env python3
"""Per-candidate latency of the galapagos evaluation worker, as the Rust side sees it.

Drives assets/python/galapagos_worker.py over its JSON-line protocol (request ->
"started" -> result) with a stream of candidates and prints the mean / median /
p95 round trip. Stdlib only; printed, not asserted.

  python3 bench/worker_latency.py [TASK_DIR] [COUNT] [GAP_MS]

TASK_DIR defaults to ../shared/bench/task_quadratic (else bench/task_quadratic);
GAP_MS (default 2) is an idle pause between candidates, standing in for the
prompt + model call that separate two evaluations in a real run.
WORKER=path/to/galapagos_worker.py compares another version of the worker
(e.g. `git show REV:assets/python/galapagos_worker.py > /tmp/old_worker.py`).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def default_task():
    shared = os.path.join(ROOT, "..", "shared", "bench", "task_quadratic")
    return shared if os.path.isdir(shared) else os.path.join(HERE, "task_quadratic")


def main():
    task = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else default_task())
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    gap = float(sys.argv[3]) / 1000.0 if len(sys.argv) > 3 else 0.002
    program = open(os.path.join(task, "initial_program.py"), encoding="utf-8").read()
    scratch = tempfile.mkdtemp(prefix="galapagos-wbench-")
    config = {
        "evaluator": os.path.join(task, "evaluator.py"),
        "task_dir": task,
        "suffix": ".py",
        "scratch": scratch,
    }
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "assets", "python")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.Popen(
        [sys.executable, os.environ.get("WORKER") or os.path.join(ROOT, "assets", "python", "galapagos_worker.py"),
         json.dumps(config)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=task, env=env,
    )
    try:
        hello = json.loads(proc.stdout.readline())
        if not hello.get("ready"):
            sys.exit(f"worker not ready: {hello}")
        times = []
        for i in range(count):
            text = program.replace("A = 1.0", f"A = {1.0 + i * 1e-3}")
            req = {"id": i + 1, "program": text, "timeout": 10.0, "cascade": False, "thresholds": []}
            t0 = time.perf_counter()
            proc.stdin.write((json.dumps(req) + "\n").encode())
            proc.stdin.flush()
            while True:
                reply = json.loads(proc.stdout.readline())
                if reply.get("id") == i + 1 and "started" not in reply:
                    break
            times.append(time.perf_counter() - t0)
            if "combined_score" not in reply.get("scores", {}):
                sys.exit(f"bad reply: {reply}")
            if gap > 0:
                time.sleep(gap)
        ms = sorted(t * 1000 for t in times[10:] or times)
        print(f"worker round trip over {len(ms)} candidates (gap {gap * 1000:.0f} ms): "
              f"mean {statistics.mean(ms):.2f} ms, median {statistics.median(ms):.2f} ms, "
              f"p95 {ms[int(len(ms) * 0.95) - 1]:.2f} ms")
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
