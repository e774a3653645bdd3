#!/usr/bin/env python3
"""Peak resident memory of a whole process tree (stdlib only, Linux /proc).

  python3 bench/tree_rss.py PID OUT.json [INTERVAL_MS]

Every INTERVAL_MS (default 25) it sums VmRSS over PID and all its descendants,
until PID is gone, then writes {"peak_tree_mib", "peak_single_mib", "max_procs",
"samples"} to OUT.json. Used by bench/side_by_side.sh.
"""
import json
import os
import sys
import time


def parents():
    """pid -> parent pid for every process visible in /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
            # the command name may contain spaces and parentheses: split after the last ')'
            table[int(name)] = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return table


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
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
