#!/usr/bin/env python3
"""Two galapagos builds on the side-by-side task, taking turns, with what each
run spent where.

usage: bench/before_after.py OUT.tsv N P L REPEATS NAME=BINARY [NAME=BINARY ...]
       e.g. bench/before_after.py /tmp/ab.tsv 100 1 0 5 before=/tmp/old/galapagos after=target/release/galapagos

Each repeat runs every binary once, in the order given, on the same task, card
and fake model server as bench/side_by_side.sh (CARD, TASK, FAKE, PYEXE and
PORT override them), so a load that comes and goes meets both builds alike.
Per run it appends a row and prints it:
  wall_s, ovh_ms         the whole command, and wall/N - L/P per iteration
  start_tail_s           wall time outside the model's first-to-last request:
                         start-up, the initial program's evaluation, shut-down
  eval_med/p90/mean_ms   the children's evaluation time as the run timed it
                         (genomes.jsonl timings.evaluate_ms): a candidate's
                         path from its request to its result
  eval0_ms               the initial program's evaluation (the worker's start)
  cpu_user/sys_ms        CPU time of the run's whole process tree per
                         iteration (worker and candidates in their namespaces
                         included), from a cgroup of its own (as root, cgroup
                         v1 cpuacct or v2 cpu.stat; empty where none can be made)
  load1                  the load average at the run's end
Then the medians per binary.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SHARED", ROOT.parent / "shared" / "bench"))


def pick(env, *candidates):
    if os.environ.get(env):
        return Path(os.environ[env])
    return next((c for c in candidates if c.exists()), candidates[-1])


TASK = pick("TASK", SHARED / "task_quadratic", ROOT / "bench" / "task_quadratic")
FAKE = pick("FAKE", SHARED / "fake_llm.py", ROOT / "bench" / "fake_llm.py")
CARD = pick("CARD", ROOT / "cards" / "best_of_n.yaml")
PORT = int(os.environ.get("PORT", "18391"))
PYEXE = os.environ.get("PYEXE", "/tmp/galapagos-bench/oe-venv/bin/python")


class Cgroup:
    """A cgroup the run is started in, for its process tree's CPU time."""

    def __init__(self, name):
        self.v1 = Path("/sys/fs/cgroup/cpuacct") / name
        self.v2 = Path("/sys/fs/cgroup") / name
        self.dir = None
        for d in (self.v1, self.v2):
            try:
                d.mkdir(exist_ok=True)
                if (d / "cgroup.procs").exists():
                    self.dir = d
                    break
            except OSError:
                pass

    def cpu(self):
        """(user, system) seconds so far."""
        if self.dir == self.v1:
            return tuple(int((self.dir / f"cpuacct.usage_{k}").read_text()) / 1e9 for k in ("user", "sys"))
        stat = dict(line.split() for line in (self.dir / "cpu.stat").read_text().splitlines())
        return int(stat["user_usec"]) / 1e6, int(stat["system_usec"]) / 1e6

    def remove(self):
        if self.dir:
            try:
                self.dir.rmdir()
            except OSError:
                pass


def card_for(out):
    """The card with the evaluator's python set, as side_by_side.sh writes it."""
    lines, inside = [], False
    for line in CARD.read_text().splitlines():
        if not line.startswith(" "):
            inside = line.startswith("evaluator:")
            lines.append(line)
            if inside:
                lines += [f"  python: {PYEXE}", "  candidates_per_process: 1"]
            continue
        if inside and line.strip().split(":")[0] in ("python", "candidates_per_process"):
            continue
        lines.append(line)
    out.write_text("\n".join(lines) + "\n")
    return out


def one(name, binary, n, p, latency, work, cgroup, card):
    d = work / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    server = subprocess.Popen(
        [sys.executable, str(FAKE), "--port", str(PORT), "--latency-ms", str(latency), "--seed", "0",
         "--max-seconds", "900", "--stats-file", str(d / "llm_stats.json")],
        stderr=open(d / "fake.log", "w"))
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{PORT}/stats", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        cpu0 = cgroup.cpu() if cgroup.dir else None
        enter = f'echo $$ > {cgroup.dir}/cgroup.procs && exec "$@"' if cgroup.dir else 'exec "$@"'
        t0 = time.time()
        rc = subprocess.call(
            ["sh", "-c", enter, "sh", binary, "run", str(card), "--task", str(TASK), "--iterations", str(n),
             "--parallel", str(p), "--seed", "0", "--api-base", f"http://127.0.0.1:{PORT}/v1", "--model", "fake",
             "--api-key-env", "GALAPAGOS_BENCH_NO_KEY", "--quiet", "--out", str(d / "runs")],
            env=dict(os.environ, XDG_CONFIG_HOME=str(d / "xdg")),
            stdout=open(d / "run.log", "w"), stderr=subprocess.STDOUT, timeout=900)
        wall = time.time() - t0
        cpu1 = cgroup.cpu() if cgroup.dir else None
    finally:
        server.terminate()
        server.wait()
    if rc != 0:
        sys.exit(f"{name} exited with {rc}:\n{(d / 'run.log').read_text()[-2000:]}")
    stats = json.loads((d / "llm_stats.json").read_text())
    genomes = [json.loads(x) for x in next((d / "runs").glob("*/genomes.jsonl")).read_text().splitlines()]
    ev = sorted(g["timings"]["evaluate_ms"] for g in genomes if g["iteration"] != 0)
    ev0 = next(g["timings"]["evaluate_ms"] for g in genomes if g["iteration"] == 0)
    cpu = ("", "") if cpu0 is None else tuple(f"{(b - a) / n * 1000:.2f}" for a, b in zip(cpu0, cpu1))
    return [name, n, p, latency, f"{wall:.3f}", f"{(wall / n - latency / 1000 / p) * 1000:.2f}",
            f"{wall - stats['first_to_last_req_s']:.3f}", f"{statistics.median(ev):.2f}",
            f"{ev[int(0.9 * (len(ev) - 1))]:.2f}", f"{statistics.mean(ev):.2f}", f"{ev0:.1f}",
            cpu[0], cpu[1], f"{os.getloadavg()[0]:.1f}"]


HEADER = ["name", "N", "P", "L_ms", "wall_s", "ovh_ms", "start_tail_s", "eval_med_ms", "eval_p90_ms",
          "eval_mean_ms", "eval0_ms", "cpu_user_ms", "cpu_sys_ms", "load1"]


def main():
    if len(sys.argv) < 7:
        sys.exit(__doc__)
    out, n, p, latency, repeats = Path(sys.argv[1]), *(int(a) for a in sys.argv[2:6])
    builds = [a.split("=", 1) for a in sys.argv[6:]]
    for what, path in (("task", TASK / "evaluator.py"), ("fake model server", FAKE), ("card", CARD)):
        if not path.exists():
            sys.exit(f"no {what} at {path} (SHARED=<dir with fake_llm.py and task_quadratic>, or TASK=, FAKE=, CARD=)")
    new = not out.exists()
    rows = []
    with tempfile.TemporaryDirectory(prefix="galapagos-ab-") as tmp, open(out, "a") as f:
        work = Path(tmp)
        card = card_for(work / "card.yaml")
        if new:
            f.write("\t".join(HEADER) + "\n")
        groups = {name: Cgroup(f"galapagos-ab-{os.getpid()}-{name}") for name, _ in builds}
        try:
            for _ in range(repeats):
                for name, binary in builds:
                    row = one(name, binary, n, p, latency, work, groups[name], card)
                    rows.append(row)
                    f.write("\t".join(map(str, row)) + "\n")
                    f.flush()
                    print("\t".join(map(str, row)), flush=True)
        finally:
            for g in groups.values():
                g.remove()
    print("medians:")
    for name, _ in builds:
        mine = [dict(zip(HEADER, r)) for r in rows if r[0] == name]
        med = {k: statistics.median(float(r[k]) for r in mine) for k in HEADER[4:] if all(r[k] != "" for r in mine)}
        print(name, " ".join(f"{k}={v:.2f}" for k, v in med.items()))


if __name__ == "__main__":
    main()
