#!/usr/bin/env bash
# Galapagos vs OpenEvolve, side by side: same task, same fake OpenAI-compatible
# server, same N (iterations), P (iterations in flight) and L (model latency).
#
# Galapagos runs in two evaluation modes (the evaluator's
# `candidates_per_process`):
#   galapagos        1    a fresh forked child per candidate (the default: full isolation)
#   galapagos-reuse  REUSE (100)  a child serves up to 100 candidates in turn, like
#                    OpenEvolve's pool workers, which evaluate in-process; still killed at
#                    the timeout, and state is put back between candidates
# The last line compares OpenEvolve with galapagos-reuse (the like-for-like
# isolation model); the line above it with the default mode.
# Both tools evaluate the task under the same interpreter: OpenEvolve runs
# (and evaluates in-process) from its venv, and galapagos's evaluator gets
# `python:` set to that venv's python. A venv does not load the base
# interpreter's site-packages `.pth` files, which can cost tens of ms per
# interpreter start (this sandbox's base python imports certifi from one:
# ~25 ms), so giving galapagos the base python would charge it a start-up cost
# OpenEvolve does not pay. With SKIP_OPENEVOLVE=1 and no venv, galapagos gets
# the python3 on PATH as resolved once here (never a version manager's shim,
# which costs ~90 ms per start with pyenv). PYEXE=... overrides either.
#
# Usage:   bench/side_by_side.sh                       # default grid, ~30 min on 2 cores
#          N=100 PS=1 LS=0 GAL_ONLY_NS= CHECK_P8= bench/side_by_side.sh   # quick
# Env knobs (defaults):
#   NS="100 1000" (or N=...)  PS="1 4"  LS="0 200"   the paired grid
#   GAL_ONLY_NS="10000"  GAL_ONLY_PS="1 4"  GAL_ONLY_LS="0"   galapagos alone (empty to skip)
#   CHECK_P8="8:200:400"     galapagos alone at P:L:N, reported as % of the ideal P/L (empty to skip)
#   MODES="galapagos galapagos-reuse"   which galapagos modes run   REUSE=100
#                            (galapagos-before: the default mode with the binary
#                            GALAPAGOS_BEFORE, to compare two builds in one invocation)
#   REPEATS=1                every paired cell runs this many times (the tools take
#                            turns); the tables and ratios use each cell's median
#   CARD=cards/best_of_n.yaml   GALAPAGOS=<release binary>   (built with cargo build --release if missing)
#   VENV=$BENCH_DIR/oe-venv  (OpenEvolve 0.4.0 is pip-installed there when missing)
#   SKIP_OPENEVOLVE=1        galapagos only
#   PYEXE=<python>           galapagos's evaluator interpreter (default: $VENV/bin/python, see above)
#   BENCH_DIR=/tmp/galapagos-bench   PORT=18380   SEED=0   RUN_TIMEOUT=900 (s, per run)
#   SHARED=../shared/bench   (fake_llm.py and task_quadratic come from there when present)
#
# For each run it prints wall time, iterations/s, overhead per iteration
# (wall/N - L/P, in ms) and the peak RSS of the whole process tree; then the
# ratios. Every process is bounded by `timeout` and only talks to 127.0.0.1.
# Wall time is the whole command (start-up, first evaluation, shutdown) for both.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH="$ROOT/bench"
SHARED=${SHARED:-$ROOT/../shared/bench}
BENCH_DIR=${BENCH_DIR:-/tmp/galapagos-bench}
VENV=${VENV:-$BENCH_DIR/oe-venv}
NS=${NS:-${N:-"100 1000"}}
PS=${PS:-"1 4"}
LS=${LS:-"0 200"}
GAL_ONLY_NS=${GAL_ONLY_NS-"10000"}
GAL_ONLY_PS=${GAL_ONLY_PS:-"1 4"}
GAL_ONLY_LS=${GAL_ONLY_LS:-"0"}
CHECK_P8=${CHECK_P8-"8:200:400"}
CARD=${CARD:-$ROOT/cards/best_of_n.yaml}
PORT=${PORT:-18380}
SEED=${SEED:-0}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
SKIP_OPENEVOLVE=${SKIP_OPENEVOLVE:-0}
MODES=${MODES:-"galapagos galapagos-reuse"}
REUSE=${REUSE:-100}
REPEATS=${REPEATS:-1}
PY=python3

die() { echo "side_by_side: $*" >&2; exit 1; }

# ---------------------------------------------------------------- inputs
if [ -d "$SHARED/task_quadratic" ]; then TASK="$SHARED/task_quadratic"; else TASK="$BENCH/task_quadratic"; fi
[ -f "$TASK/evaluator.py" ] && [ -f "$TASK/initial_program.py" ] || die "no task at $TASK"
if [ -f "$SHARED/fake_llm.py" ]; then FAKE="$SHARED/fake_llm.py"; else FAKE="$BENCH/fake_llm.py"; fi
[ -f "$FAKE" ] || die "no fake OpenAI-compatible server (looked for $SHARED/fake_llm.py and $BENCH/fake_llm.py)"
command -v /usr/bin/time > /dev/null || true
mkdir -p "$BENCH_DIR" || die "cannot create $BENCH_DIR"

if [ -z "${GALAPAGOS:-}" ]; then
  for cand in "${CARGO_TARGET_DIR:-$ROOT/target}/release/galapagos" "$ROOT/target/release/galapagos"; do
    [ -x "$cand" ] && GALAPAGOS="$cand" && break
  done
fi
if [ -z "${GALAPAGOS:-}" ]; then
  echo "building galapagos (release) ..." >&2
  (cd "$ROOT" && timeout 3600 cargo build --release --bin galapagos) || die "release build failed"
  GALAPAGOS="${CARGO_TARGET_DIR:-$ROOT/target}/release/galapagos"
fi
[ -x "$GALAPAGOS" ] || die "no galapagos binary at $GALAPAGOS"

if [ "$SKIP_OPENEVOLVE" != 1 ] && [ ! -x "$VENV/bin/openevolve-run" ]; then
  echo "installing OpenEvolve 0.4.0 into $VENV (pip, outside the repo) ..." >&2
  timeout 120 $PY -m venv "$VENV" || die "cannot create a venv at $VENV"
  timeout 900 "$VENV/bin/pip" install -q "openevolve==0.4.0" || die "pip install openevolve failed"
fi

# One card per galapagos mode: the evaluator's `python` and `candidates_per_process` set.
if [ -z "${PYEXE:-}" ]; then
  if [ -x "$VENV/bin/python" ]; then
    PYEXE="$VENV/bin/python"
  else
    PYEXE=$($PY -c 'import sys; print(sys.executable)') || die "cannot run $PY"
  fi
fi
"$PYEXE" -c 'import sys; assert sys.version_info >= (3, 9)' 2> /dev/null || die "evaluator interpreter $PYEXE does not run (Python >= 3.9 needed)"
write_card() { # MODE OUT
  local per=1
  [ "$1" = galapagos-reuse ] && per=$REUSE
  $PY - "$CARD" "$2" "$PYEXE" "$per" <<'EOF' || die "cannot write a card for $1 from $CARD"
import sys
src, out, python, per = sys.argv[1:]
lines, inside = [], False
for line in open(src, encoding="utf-8").read().splitlines():
    if not line.startswith(" "):
        inside = line.startswith("evaluator:")
        lines.append(line)
        if inside:
            lines += [f"  python: {python}", f"  candidates_per_process: {per}"]
        continue
    if inside and line.strip().split(":")[0] in ("python", "candidates_per_process"):
        continue
    lines.append(line)
open(out, "w", encoding="utf-8").write("\n".join(lines) + "\n")
EOF
}
for mode in $MODES; do
  case "$mode" in
    galapagos|galapagos-reuse) ;;
    galapagos-before) [ -x "${GALAPAGOS_BEFORE:-}" ] || die "mode galapagos-before needs GALAPAGOS_BEFORE=<binary>" ;;
    *) die "unknown mode $mode (galapagos, galapagos-reuse, galapagos-before)";;
  esac
  write_card "$mode" "$BENCH_DIR/card-$mode.yaml"
done

RESULTS="$BENCH_DIR/results.tsv"
printf 'tool\tN\tP\tL_ms\trc\twall_s\titer_per_s\tovh_ms_per_iter\tpeak_tree_rss_MiB\tllm_requests\tllm_max_in_flight\n' > "$RESULTS"

# ---------------------------------------------------------------- one run
start_fake() { # L DIR
  $PY "$FAKE" --port "$PORT" --latency-ms "$1" --seed "$SEED" \
      --max-seconds $((RUN_TIMEOUT + 30)) --stats-file "$2/llm_stats.json" 2> "$2/fake_llm.log" &
  SRV=$!
  for _ in $(seq 1 100); do
    $PY -c "import urllib.request;urllib.request.urlopen('http://127.0.0.1:$PORT/stats',timeout=1)" \
        2>/dev/null && return 0
    sleep 0.1
  done
  die "fake server did not start on port $PORT"
}

stop_fake() {
  kill -TERM "$SRV" 2>/dev/null
  for _ in $(seq 1 50); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SRV" 2>/dev/null
  wait "$SRV" 2>/dev/null
}

oe_config() { # N P DIR
  cat > "$3/config.yaml" <<EOF
max_iterations: $1
checkpoint_interval: 100
log_level: INFO
random_seed: 42
language: python
diff_based_evolution: true
max_code_length: 10000
llm:
  api_base: "http://127.0.0.1:$PORT/v1"
  api_key: "fake-key"
  models:
    - name: "fake-model"
      weight: 1.0
  temperature: 0.7
  max_tokens: 1024
  timeout: 30
  retries: 0
  retry_delay: 1
prompt:
  system_message: "You tune the numeric constants of a quadratic so it matches a hidden target. Reply with SEARCH/REPLACE diffs."
  num_top_programs: 3
  num_diverse_programs: 2
database:
  in_memory: true
  population_size: 1000
  archive_size: 100
  num_islands: 1
  random_seed: 42
evaluator:
  timeout: 30
  max_retries: 1
  cascade_evaluation: false
  parallel_evaluations: $2
  use_llm_feedback: false
  enable_artifacts: true
EOF
}

run_one() { # TOOL N P L
  local tool=$1 n=$2 p=$3 l=$4
  local d="$BENCH_DIR/${tool}_n${n}_p${p}_l${l}"
  rm -rf "$d"; mkdir -p "$d"
  start_fake "$l" "$d"
  # The RSS sampler starts (and pays its own interpreter start) before the
  # clock does; it gets the PID to follow once the tool is launched.
  coproc RSS { $PY "$BENCH/tree_rss.py" - "$d/rss.json"; }
  local rsspid=$RSS_PID rss_in=${RSS[1]} ready=
  read -r -t 30 ready <&"${RSS[0]}" || die "the RSS sampler did not start"
  local t0 t1 pid
  t0=$(date +%s.%N)
  if [ "$tool" != openevolve ]; then
    local bin=$GALAPAGOS
    [ "$tool" = galapagos-before ] && bin=$GALAPAGOS_BEFORE
    XDG_CONFIG_HOME="$d/xdg" timeout -k 5 "$RUN_TIMEOUT" "$bin" run "$BENCH_DIR/card-$tool.yaml" --task "$TASK" \
        --iterations "$n" --parallel "$p" --seed "$SEED" \
        --api-base "http://127.0.0.1:$PORT/v1" --model fake --api-key-env GALAPAGOS_BENCH_NO_KEY \
        --quiet --out "$d/runs" > "$d/run.log" 2>&1 &
  else
    oe_config "$n" "$p" "$d"
    timeout -k 5 "$RUN_TIMEOUT" "$VENV/bin/openevolve-run" "$TASK/initial_program.py" "$TASK/evaluator.py" \
        --config "$d/config.yaml" --iterations "$n" --output "$d/oe_out" > "$d/run.log" 2>&1 &
  fi
  pid=$!
  echo "$pid" >&"$rss_in"
  wait "$pid"; local rc=$?
  t1=$(date +%s.%N)
  wait "$rsspid"
  stop_fake
  $PY - "$tool" "$n" "$p" "$l" "$rc" "$t0" "$t1" "$d" >> "$RESULTS" <<'EOF'
import json, sys
tool, n, p, l, rc, t0, t1, d = sys.argv[1:]
n, p, l, rc = int(n), int(p), float(l), int(rc)
wall = float(t1) - float(t0)
def load(name):
    try:
        with open(f"{d}/{name}") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
rss, llm = load("rss.json"), load("llm_stats.json")
ovh = (wall / n - l / 1000.0 / p) * 1000.0
print("\t".join(str(x) for x in (tool, n, p, int(l), rc, f"{wall:.2f}", f"{n / wall:.2f}", f"{ovh:.2f}",
                                 rss.get("peak_tree_mib", ""), llm.get("requests", ""),
                                 llm.get("max_in_flight", ""))))
EOF
  tail -n 1 "$RESULTS" | awk -F'\t' '{printf "%-15s N=%-5s P=%s L=%-3sms rc=%s wall %7ss  %8s it/s  overhead %7s ms/iter  peak RSS %6s MiB  (LLM requests %s, max in flight %s)\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11}'
  [ "$rc" = 0 ] || echo "  !! $tool exited with $rc: see $d/run.log" >&2
}

echo "galapagos: $GALAPAGOS ($CARD; modes: $MODES; python: $PYEXE); task: $TASK; fake server: $FAKE; nproc=$(nproc)"
[ "$SKIP_OPENEVOLVE" = 1 ] || echo "openevolve: $("$VENV/bin/python" -c 'import openevolve;print(openevolve.__version__)' 2>/dev/null) in $VENV"

for n in $NS; do for l in $LS; do for p in $PS; do for _ in $(seq 1 "$REPEATS"); do
  for mode in $MODES; do run_one "$mode" "$n" "$p" "$l"; done
  [ "$SKIP_OPENEVOLVE" = 1 ] || run_one openevolve "$n" "$p" "$l"
done; done; done; done
for n in $GAL_ONLY_NS; do for l in $GAL_ONLY_LS; do for p in $GAL_ONLY_PS; do
  for mode in $MODES; do run_one "$mode" "$n" "$p" "$l"; done
done; done; done
if [ -n "$CHECK_P8" ]; then
  IFS=: read -r cp cl cn <<< "$CHECK_P8"
  for mode in $MODES; do run_one "$mode" "$cn" "$cp" "$cl"; done
fi

# ---------------------------------------------------------------- summary
$PY - "$RESULTS" "${CHECK_P8:-}" "$MODES" <<'EOF'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
check = sys.argv[2]
modes = sys.argv[3].split()
# The headline (last line) is the like-for-like mode when it ran.
modes.sort(key=lambda m: m == "galapagos-reuse")
def key(r):
    return (int(r["N"]), int(r["P"]), int(r["L_ms"]))
def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
def cells(tool):
    """One row per cell: the median of its successful runs (rc "0"), else a failed run."""
    groups = {}
    for r in rows:
        if r["tool"] == tool:
            groups.setdefault(key(r), []).append(r)
    out = {}
    for k, runs in groups.items():
        ok = [r for r in runs if r["rc"] == "0"]
        if not ok:
            out[k] = runs[0]
            continue
        m = dict(ok[0])
        for field in ("wall_s", "iter_per_s", "ovh_ms_per_iter", "peak_tree_rss_MiB"):
            try:
                m[field] = f"{median([float(r[field]) for r in ok]):.2f}"
            except ValueError:
                pass
        m["runs"] = len(ok)
        out[k] = m
    return out
oe = cells("openevolve")
print()
repeated = len(rows) != len({(r["tool"], key(r)) for r in rows})
print("| tool | N | P | L ms | wall s | iter/s | overhead ms/iter | peak RSS tree MiB |" + (" runs |" if repeated else ""))
print("|---|---|---|---|---|---|---|---|" + ("---|" if repeated else ""))
tools = list(dict.fromkeys(r["tool"] for r in rows))
by_tool = {t: cells(t) for t in tools}
for k in dict.fromkeys(key(r) for r in rows):
    for t in tools:
        r = by_tool[t].get(k)
        if r is None:
            continue
        print(f"| {r['tool']} | {r['N']} | {r['P']} | {r['L_ms']} | {r['wall_s']} | {r['iter_per_s']} | "
              f"{r['ovh_ms_per_iter']} | {r['peak_tree_rss_MiB']} |" + (f" {r.get('runs', 0)} |" if repeated else ""))
FLOOR = 0.05  # ms: below this an overhead is measurement noise; keeps ratios finite
headline = []
for mode in modes:
    gal = cells(mode)
    ratios = []
    if oe:
        print()
        print(f"| N | P | L ms | overhead openevolve/{mode} | iter/s {mode}/openevolve | RSS openevolve/{mode} |")
        print("|---|---|---|---|---|---|")
        for k in sorted(gal):
            if k not in oe:
                continue
            g, o = gal[k], oe[k]
            if g["rc"] != "0" or o["rc"] != "0":
                print(f"| {k[0]} | {k[1]} | {k[2]} | (a run failed) | | |")
                continue
            ro = max(float(o["ovh_ms_per_iter"]), FLOOR) / max(float(g["ovh_ms_per_iter"]), FLOOR)
            ri = float(g["iter_per_s"]) / float(o["iter_per_s"])
            try:
                rm = float(o["peak_tree_rss_MiB"]) / float(g["peak_tree_rss_MiB"])
                rm = f"{rm:.2f}"
            except (ValueError, ZeroDivisionError):
                rm = ""
            ratios.append((k, ro))
            print(f"| {k[0]} | {k[1]} | {k[2]} | {ro:.1f} | {ri:.2f} | {rm} |")
    by_n = {}
    for (n, p, l), r in gal.items():
        if l == 0 and r["rc"] == "0":
            by_n.setdefault(p, {})[n] = float(r["ovh_ms_per_iter"])
    for p, m in sorted(by_n.items()):
        if len(m) > 1:
            lo, hi = min(m), max(m)
            print(f"{mode} flatness P={p} L=0: overhead {m[lo]:.2f} ms at N={lo} -> {m[hi]:.2f} ms at N={hi} "
                  f"({m[hi] / max(m[lo], FLOOR):.2f}x)")
    if check:
        cp, cl, cn = (int(x) for x in check.split(":"))
        r = gal.get((cn, cp, cl))
        if r and r["rc"] == "0" and cl > 0:
            ideal = cp / (cl / 1000.0)
            print(f"{mode} P={cp} L={cl}ms N={cn}: {float(r['iter_per_s']):.2f} iter/s = "
                  f"{100 * float(r['iter_per_s']) / ideal:.1f}% of P/L = {ideal:.0f} iter/s")
    if ratios:
        gm = math.exp(sum(math.log(x) for _, x in ratios) / len(ratios))
        at100 = [x for k, x in ratios if k[0] == 100]
        worst = f"; worst at N=100: {min(at100):.1f}" if at100 else ""
        headline.append(f"overhead ratio openevolve/{mode} (geometric mean of {len(ratios)} cells{worst}): {gm:.1f}")
        last = f"overhead ratio openevolve/galapagos: {gm:.1f}"
    else:
        last = "overhead ratio openevolve/galapagos: n/a (no paired runs)"
print()
for line in headline:
    print(line)
print(last)
EOF
