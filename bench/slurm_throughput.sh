#!/usr/bin/env bash
# The slurm evaluator on a running cluster (SLURM_CONF must point at it): a task whose evaluator takes 1 s, N
# iterations with P in flight, once per placement mode. Prints, per mode:
#   throughput  evaluations per second after the initial program (iterations / (wall time - genome 0's
#               evaluation, which includes starting the first allocation)), and as a share of the ideal P/s
#   overhead    per-candidate scheduling overhead: mean evaluation time of the proposed candidates minus the
#               evaluator's 1 s (placing the work, starting the interpreter on the node, reading the result)
# Printed, not asserted (tests/slurm.rs asserts the pool's overlap, and its throughput against the local
# evaluator's run beside it).
#   SLURM_CONF=... bench/slurm_throughput.sh            # N=20 P=2
#   N=40 P=2 PYTHON=/usr/bin/python3 bench/slurm_throughput.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-20}; P=${P:-2}; PYTHON=${PYTHON:-python3}
: "${SLURM_CONF:?point SLURM_CONF at a running cluster}"
bin=${GALAPAGOS:-target/release/galapagos}
[ -x "$bin" ] || bin=target/debug/galapagos
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/task"
cp bench/task_quadratic/initial_program.py "$work/task/" 2>/dev/null || printf 'A = 1.0\n\ndef run():\n    return A\n' > "$work/task/initial_program.py"
cat > "$work/task/evaluator.py" <<'PY'
import time

def evaluate(path):
    time.sleep(1.0)
    return {"combined_score": 0.5}
PY
echo "mode  N  P  wall_s  throughput_per_s  share_of_ideal  overhead_ms_mean  overhead_ms_median"
for mode in pool job; do
  sed -e "s/^  mode: .*/  mode: $mode/" -e "s#^  python: .*#  python: $PYTHON#" cards/best_of_n_slurm.yaml > "$work/card.yaml"
  out="$work/runs-$mode"
  "$bin" run "$work/card.yaml" --task "$work/task" --iterations "$N" --parallel "$P" --quiet --out "$out" > "$work/out-$mode.txt"
  python3 - "$out" "$mode" "$N" "$P" <<'PY'
import json, os, statistics, sys
out, mode, n, p = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
run = os.path.join(out, os.listdir(out)[0])
genomes = [json.loads(l) for l in open(os.path.join(run, "genomes.jsonl"))]
summary = json.load(open(os.path.join(run, "summary.json")))
wall = summary["wall_secs"]
start = genomes[0]["timings"]["evaluate_ms"] / 1000
evaluated = [g for g in genomes[1:] if g.get("placement")]
rate = len(evaluated) / (wall - start)
over = [g["timings"]["evaluate_ms"] - 1000 for g in evaluated]
print(f"{mode:5} {n:2} {p:2} {wall:7.2f} {rate:17.2f} {rate / p:15.0%} {statistics.mean(over):17.0f} {statistics.median(over):19.0f}")
PY
done
