"""Evaluator for prime_count_cpp: the candidate is a folder holding a small
C++ library (include/, src/). It is built with g++ together with the
benchmark from this task folder (bench/main.cpp under initial_program/, not
the candidate's copy), run on three values of n drawn afresh for every
evaluation, and every count is checked against a sieve computed here, so a
table of answers cannot pass.

combined_score = numbers counted per CPU second of the benchmark, in units of
1e8 (CPU time, user + system, so other load on the machine matters little;
threads count for the CPU time they use). A program that does not build,
crashes, times out or miscounts is invalid. Only the C++ standard library is
used: nothing is fetched, and the build writes only into a temporary folder.
"""
import glob
import os
import random
import resource
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "initial_program", "bench", "main.cpp")
LOW, HIGH = 1_500_000, 4_500_000
BUILD_TIMEOUT = 90
RUN_TIMEOUT = 60


def find_compiler():
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        path = name and shutil.which(name)
        if path:
            return path
    return None


CXX = find_compiler()


def failure(message, **artifacts):
    return {"combined_score": 0.0, "error": message, "artifacts": artifacts}


def prime_counts(ns):
    """pi(n) for every n, from one sieve up to the largest."""
    top = max(ns)
    sieve = bytearray([1]) * (top + 1)
    sieve[0] = sieve[1] = 0
    i = 2
    while i * i <= top:
        if sieve[i]:
            sieve[i * i :: i] = bytes(len(range(i * i, top + 1, i)))
        i += 1
    counts, running, at = {}, 0, 0
    for n in sorted(ns):
        running += sum(sieve[at : n + 1])
        at = n + 1
        counts[n] = running
    return counts


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def evaluate(program_path):
    if CXX is None:
        return failure("no C++ compiler where the evaluator runs: install g++ (Debian: build-essential) or set CXX")
    program_path = os.path.abspath(program_path)
    sources = sorted(glob.glob(os.path.join(program_path, "src", "*.cpp")))
    if not sources:
        return failure("the program has no src/*.cpp")
    rng = random.Random(os.urandom(16))
    ns = sorted(rng.randrange(LOW, HIGH) for _ in range(3))
    with tempfile.TemporaryDirectory() as build:
        binary = os.path.join(build, "bench_primes")
        command = [CXX, "-O2", "-std=c++17", "-pthread", "-I", os.path.join(program_path, "include"),
                   *sources, BENCH, "-o", binary]
        started = time.perf_counter()
        try:
            built = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT, cwd=build)
        except subprocess.TimeoutExpired:
            return failure(f"the build took more than {BUILD_TIMEOUT} s")
        build_s = time.perf_counter() - started
        if built.returncode != 0:
            first = next((l for l in built.stderr.splitlines() if "error" in l), "build error")
            return failure(f"does not build: {first}", compiler_output=built.stderr[-4000:])
        cpu_before = cpu_of_children()
        started = time.perf_counter()
        try:
            ran = subprocess.run([binary, *map(str, ns)], capture_output=True, text=True, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            return failure(f"the benchmark ran for more than {RUN_TIMEOUT} s (n = {ns})")
        wall_s = time.perf_counter() - started
        cpu_s = max(cpu_of_children() - cpu_before, 1e-4)
    if ran.returncode != 0:
        return failure(f"the benchmark exited with status {ran.returncode}", program_stderr=ran.stderr[-4000:])
    want = prime_counts(ns)
    got = {}
    for line in ran.stdout.splitlines():
        parts = line.split()
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            return failure(f"the benchmark printed {line[:80]!r}, not 'n count'")
        got[int(parts[0])] = int(parts[1])
    for n in ns:
        if got.get(n) != want[n]:
            return failure(f"count_primes({n}) returned {got.get(n)}, but there are {want[n]} primes up to {n}")
    rate = sum(ns) / cpu_s
    return {
        "combined_score": rate / 1e8,
        "numbers_per_cpu_second": rate,
        "benchmark_cpu_s": round(cpu_s, 4),
        "benchmark_wall_s": round(wall_s, 4),
        "build_s": round(build_s, 3),
        "feedback": f"n = {ns}: counted in {cpu_s:.3f} s of CPU time ({rate / 1e6:.1f} million numbers per second)",
    }
