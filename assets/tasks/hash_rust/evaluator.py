"""Evaluator for hash_rust: compile the candidate with rustc, run it on a
fixed set of structured keys, and score how evenly it spreads them over 1024
buckets.

Everything is recomputed here from the buckets the program prints: the
program reports nothing about itself. combined_score = 1 / (1 + cv), where cv
is the coefficient of variation of the bucket loads (0 for a perfectly even
spread). A program that does not compile, crashes, prints the wrong number of
lines or a bucket outside 0..1023 is invalid.
"""
import glob
import math
import os
import pwd
import shutil
import subprocess
import tempfile
import time

BUCKETS = 1024
# Keys with structure a weak hash trips over: multiples of 1024 that differ
# in a few bit fields.
KEYS = [((i % 64) << 26) | ((i // 64) << 10) for i in range(16384)]
INPUT = "".join(f"{k}\n" for k in KEYS).encode()


def find_rustc():
    """A working rustc: $RUSTC, the one on PATH, rustup's toolchains in the
    user's home (also when HOME is not the real home), the system's."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    candidates = [os.environ.get("RUSTC"), shutil.which("rustc")]
    candidates += sorted(glob.glob(os.path.join(home, ".rustup/toolchains/*/bin/rustc")), reverse=True)
    candidates += [os.path.join(home, ".cargo/bin/rustc"), "/usr/bin/rustc", "/usr/local/bin/rustc"]
    for path in candidates:
        if not path or not os.path.exists(path):
            continue
        try:
            ok = subprocess.run([path, "--version"], capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return path
    return None


RUSTC = find_rustc()


def failure(message, **artifacts):
    return {"combined_score": 0.0, "error": message, "artifacts": artifacts}


def evaluate(program_path):
    if RUSTC is None:
        return failure(
            "rustc not found where the evaluator runs: install Rust (rustup, or Debian's rustc package) "
            "or set RUSTC to a rustc path"
        )
    with tempfile.TemporaryDirectory() as build:
        binary = os.path.join(build, "candidate")
        started = time.perf_counter()
        try:
            compiled = subprocess.run(
                [RUSTC, "-O", "--edition", "2021", "-o", binary, program_path],
                capture_output=True, text=True, timeout=120, cwd=build,
            )
        except subprocess.TimeoutExpired:
            return failure("rustc took more than 120 s")
        compile_s = time.perf_counter() - started
        if compiled.returncode != 0:
            first = next((l for l in compiled.stderr.splitlines() if l.startswith("error")), "compile error")
            return failure(f"does not compile: {first}", compiler_output=compiled.stderr[-4000:])
        started = time.perf_counter()
        try:
            ran = subprocess.run([binary], input=INPUT, capture_output=True, timeout=20)
        except subprocess.TimeoutExpired:
            return failure("the program ran for more than 20 s")
        run_s = time.perf_counter() - started
    if ran.returncode != 0:
        return failure(f"the program exited with status {ran.returncode}",
                       program_stderr=ran.stderr.decode(errors="replace")[-4000:])
    lines = ran.stdout.split()
    if len(lines) != len(KEYS):
        return failure(f"expected {len(KEYS)} buckets, got {len(lines)}")
    loads = [0] * BUCKETS
    for raw in lines:
        try:
            b = int(raw)
        except ValueError:
            return failure(f"not a bucket number: {raw[:40]!r}")
        if not 0 <= b < BUCKETS:
            return failure(f"bucket {b} is outside 0..{BUCKETS - 1}")
        loads[b] += 1
    mean = len(KEYS) / BUCKETS
    cv = math.sqrt(sum((n - mean) ** 2 for n in loads) / BUCKETS) / mean
    return {
        "combined_score": 1.0 / (1.0 + cv),
        "load_cv": cv,
        "max_load": max(loads),
        "empty_buckets": sum(1 for n in loads if n == 0),
        "compile_s": round(compile_s, 3),
        "run_s": round(run_s, 4),
    }
