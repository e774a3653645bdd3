#!/usr/bin/env python3
"""Peak resident memory of a whole process tree (stdlib only, Linux /proc).

  python3 bench/tree_rss.py PID OUT.json [INTERVAL_MS]
  python3 bench/tree_rss.py - OUT.json [INTERVAL_MS]    (PID read from stdin)

Every INTERVAL_MS (default 25) it sums VmRSS over PID and all its descendants,
until PID is gone, then writes {"peak_tree_mib", "peak_single_mib", "max_procs",
"samples"} to OUT.json. Used by bench/side_by_side.sh.

With PID `-` it prints "ready" once started and then reads the PID from its
standard input: a benchmark starts the sampler before the command it measures,
so the sampler's own interpreter start (~30 ms of CPU here) does not compete
with the measured command's start on a small machine.
"""
import json
import os
import sys
import time


PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def read(path):
    """A small /proc file in one system call (no file object: the sampler
    runs beside the measured command and should cost it as little as it can)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def parents():
    """pid -> parent pid for every process visible in /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = read(f"/proc/{name}/stat")
            # the command name may contain spaces and parentheses: split after the last ')'
            table[int(name)] = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return table


def rss_kib(pid):
    """VmRSS (resident pages, from statm)."""
    try:
        return int(read(f"/proc/{pid}/statm").split()[1]) * PAGE_KIB
    except (OSError, ValueError, IndexError):
        return 0


def tree(root):
    children = {}
    for pid, ppid in parents().items():
        children.setdefault(ppid, []).append(pid)
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, []))
    return out


def main():
    if sys.argv[1] == "-":
        print("ready", flush=True)
        line = sys.stdin.readline().strip()
        if not line.isdigit():
            return
        root = int(line)
    else:
        root = int(sys.argv[1])
    out = sys.argv[2]
    interval = (float(sys.argv[3]) if len(sys.argv) > 3 else 25.0) / 1000.0
    peak_tree = peak_one = max_procs = samples = 0
    while os.path.exists(f"/proc/{root}"):
        pids = tree(root)
        values = [rss_kib(p) for p in pids]
        peak_tree = max(peak_tree, sum(values))
        peak_one = max(peak_one, max(values, default=0))
        max_procs = max(max_procs, len(pids))
        samples += 1
        time.sleep(interval)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({
            "peak_tree_mib": round(peak_tree / 1024, 1),
            "peak_single_mib": round(peak_one / 1024, 1),
            "max_procs": max_procs,
            "samples": samples,
        }, f)


if __name__ == "__main__":
    main()
