#!/usr/bin/env python3
"""Per-candidate latency of the galapagos evaluation worker's children, as the run sees it.

Plays the Rust side of assets/python/galapagos_worker.py: listens on a lane
socket, starts the worker, takes each child's lane as it connects (with the
read ends of its stdout/stderr pipes), writes a request on it and reads the
length-prefixed result, asking the worker for a replacement child whenever a
fresh one is taken and killing a child's group when it will not serve again.
Prints the mean / median / p95 round trip (request written -> result read).
Stdlib only; printed, not asserted.

  python3 bench/worker_latency.py [TASK_DIR] [COUNT] [GAP_MS] [REUSE]

TASK_DIR defaults to ../shared/bench/task_quadratic (else bench/task_quadratic);
GAP_MS (default 2) is an idle pause between candidates, standing in for the
prompt + model call that separate two evaluations in a real run; REUSE
(default 1) is the evaluator's candidates_per_process.
WORKER=path/to/galapagos_worker.py measures another version of the worker
(one that speaks the same lane protocol).
"""
import json
import os
import select
import signal
import socket
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


def accept_lane(listener, timeout=30.0):
    """The next child's lane: (pid, socket, stdout fd, stderr fd)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([listener], [], [], left)[0]:
            sys.exit("no evaluation child connected")
        conn, _ = listener.accept()
        msg, fds, _, _ = socket.recv_fds(conn, 16, 2)
        if msg == b"lane\n" and len(fds) == 2:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            pid = int.from_bytes(creds[:4], sys.byteorder)
            return pid, conn, fds[0], fds[1]
        for fd in fds:
            os.close(fd)
        conn.close()  # the worker's probe


def read_result(conn):
    data = b""
    while len(data) < 8 or len(data) < 8 + int.from_bytes(data[:8], "big"):
        chunk = conn.recv(1 << 20)
        if not chunk:
            sys.exit("a child ended without a result")
        data += chunk
    return json.loads(data[8:8 + int.from_bytes(data[:8], "big")])


def main():
    task = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else default_task())
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    gap = float(sys.argv[3]) / 1000.0 if len(sys.argv) > 3 else 0.002
    reuse = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    program = open(os.path.join(task, "initial_program.py"), encoding="utf-8").read()
    scratch = tempfile.mkdtemp(prefix="galapagos-wbench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    lanes = os.path.join(scratch, "lanes")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(lanes)
    listener.listen(64)
    standby = 1 if reuse > 1 else 2
    config = {
        "evaluator": os.path.join(task, "evaluator.py"),
        "task_dir": task,
        "suffix": ".py",
        "scratch": scratch,
        "lanes": lanes,
        "standby": standby,
        "reuse": reuse,
    }
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "assets", "python")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.Popen(
        [sys.executable, os.environ.get("WORKER") or os.path.join(ROOT, "assets", "python", "galapagos_worker.py"),
         json.dumps(config)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=task, env=env,
    )
    lane = None
    served = 0
    try:
        hello = json.loads(proc.stdout.readline())
        if not hello.get("ready"):
            sys.exit(f"worker not ready: {hello}")
        times = []
        for i in range(count):
            if lane is None:
                lane = accept_lane(listener)
                served = 0
                proc.stdin.write(b'{"fork": 1}\n')  # its replacement, as the run asks
                proc.stdin.flush()
            pid, conn, out_fd, err_fd = lane
            text = program.replace("A = 1.0", f"A = {1.0 + i * 1e-3}")
            req = {"id": i + 1, "program": text, "timeout": 10.0, "cascade": False, "thresholds": []}
            t0 = time.perf_counter()
            conn.sendall((json.dumps(req) + "\n").encode())
            reply = read_result(conn)
            times.append(time.perf_counter() - t0)
            if "combined_score" not in reply.get("scores", {}):
                sys.exit(f"bad reply: {reply}")
            served += 1
            if not reply.get("reusable"):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
                conn.close()
                os.close(out_fd)
                os.close(err_fd)
                lane = None
            if gap > 0:
                time.sleep(gap)
        ms = sorted(t * 1000 for t in times[10:] or times)
        print(f"child round trip over {len(ms)} candidates (gap {gap * 1000:.0f} ms, reuse {reuse}): "
              f"mean {statistics.mean(ms):.2f} ms, median {statistics.median(ms):.2f} ms, "
              f"p95 {ms[int(len(ms) * 0.95) - 1]:.2f} ms")
    finally:
        if lane is not None:
            try:
                os.killpg(lane[0], signal.SIGKILL)
            except OSError:
                pass
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        listener.close()


if __name__ == "__main__":
    main()
