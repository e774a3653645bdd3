#!/usr/bin/env python3
"""The fake server's own delay beyond its sleep: a floor under any tool's model call.

Starts the fake OpenAI-compatible server of the side-by-side benchmark with
latency L, sends it COUNT chat requests over one keep-alive connection from
the standard library's http.client (about the least a client can do), each
with a prompt like the benchmark's (a program shown under "# Current Program"),
and prints how long each took beyond L: mean / median / p95 / min. Every
tool's per-iteration overhead at that L includes at least this much.
Stdlib only; printed, not asserted.

  python3 bench/model_floor.py [L_MS] [COUNT]      (defaults: 200, 30)

The server comes from ../shared/bench/fake_llm.py (else bench/fake_llm.py);
PORT (default 18390) chooses its port.
"""
import http.client
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def first_existing(*paths):
    for p in paths:
        if os.path.exists(p):
            return p
    sys.exit(f"model_floor: none of {paths} exists")


def main():
    latency = float(sys.argv[1]) if len(sys.argv) > 1 else 200.0
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    port = int(os.environ.get("PORT", "18390"))
    fake = first_existing(os.path.join(ROOT, "..", "shared", "bench", "fake_llm.py"),
                          os.path.join(HERE, "fake_llm.py"))
    task = first_existing(os.path.join(ROOT, "..", "shared", "bench", "task_quadratic"),
                          os.path.join(HERE, "task_quadratic"))
    with open(os.path.join(task, "initial_program.py"), encoding="utf-8") as f:
        program = f.read()
    user = "# Current Program\n```python\n" + program + "```\n" + ("# Inspiration\n```python\n" + program + "```\n") * 4
    body = json.dumps({"model": "fake", "messages": [{"role": "system", "content": "Improve the program."},
                                                     {"role": "user", "content": user}]}).encode()
    server = subprocess.Popen([sys.executable, fake, "--port", str(port), "--latency-ms", str(latency),
                               "--seed", "0", "--max-seconds", str(int(count * (latency / 1000 + 1)) + 60)],
                              stderr=subprocess.DEVNULL)
    try:
        conn = None
        for _ in range(100):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("GET", "/stats")
                conn.getresponse().read()
                break
            except OSError:
                conn = None
                time.sleep(0.1)
        if conn is None:
            sys.exit(f"model_floor: the fake server did not start on port {port}")
        beyond = []
        for _ in range(count):
            start = time.perf_counter()
            conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            reply = conn.getresponse().read()
            beyond.append((time.perf_counter() - start) * 1000 - latency)
            json.loads(reply)
        beyond.sort()
        print(f"fake server, L = {latency:g} ms, {count} requests, one keep-alive connection (http.client): "
              f"beyond L mean {statistics.mean(beyond):.3f} ms, median {statistics.median(beyond):.3f}, "
              f"p95 {beyond[int(len(beyond) * 0.95) - 1]:.3f}, min {beyond[0]:.3f}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
