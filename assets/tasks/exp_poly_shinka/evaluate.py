"""Scores initial.py-style programs for the exp_poly_shinka task, in
ShinkaEvolve's evaluator format:

    python evaluate.py --program_path PROGRAM --results_dir DIR

writes DIR/metrics.json (combined_score; public metrics the model may see;
private metrics it may not; text_feedback for the next prompt) and
DIR/correct.json ({"correct": bool, "error": str or null}).

Standard library only, and galapagos_eval (which galapagos puts on the
command's PYTHONPATH; to run this under ShinkaEvolve itself, copy
assets/python/galapagos_eval.py beside it): approx() runs in a process of its
own and only its values come back, so a program that patches this module's
checks patches them in its own process. The fit is measured on 81 visible
points; a second set of 40 points between them is the private check.
"""
import argparse
import json
import math
import os
import time

import galapagos_eval

VISIBLE = [-1.0 + i / 40.0 for i in range(81)]
HELD_OUT = [-1.0 + (i + 0.5) / 20.0 for i in range(40)]


def values_at(module, xs):
    """In the candidate's process: approx(x) for every x."""
    approx = getattr(module, "approx", None)
    if not callable(approx):
        return {"error": "the program defines no approx(x)"}
    return {"values": [approx(x) for x in xs]}


def errors(values, xs):
    out = []
    for x, y in zip(xs, values):
        if isinstance(y, (str, bool, list, dict)) or y is None:
            raise ValueError(f"approx({x:.3f}) returned {y!r:.60}, not a number")
        y = float(y)
        if not math.isfinite(y) or abs(y) > 1e6:
            raise ValueError(f"approx({x:.3f}) returned {y!r}")
        out.append((x, y - math.exp(x)))
    return out


def judge(program_path):
    """(metrics, correct, error)"""
    started = time.perf_counter()
    try:
        found = galapagos_eval.run_with(program_path, values_at, VISIBLE + HELD_OUT, timeout=30.0,
                                        what="approx()")
        if not isinstance(found, dict) or isinstance(found.get("error"), str):
            raise ValueError(found.get("error") if isinstance(found, dict) else "no values")
        values = found.get("values")
        if not isinstance(values, list) or len(values) != len(VISIBLE) + len(HELD_OUT):
            raise ValueError("approx()'s process returned something unexpected")
        seen = errors(values[:len(VISIBLE)], VISIBLE)
        hidden = errors(values[len(VISIBLE):], HELD_OUT)
    except (galapagos_eval.CandidateError, ValueError) as exc:  # the candidate's fault: not correct
        return {"combined_score": 0.0, "public": {}, "private": {},
                "text_feedback": f"the program failed: {type(exc).__name__}: {exc}"}, False, str(exc)
    rmse = math.sqrt(sum(e * e for _, e in seen) / len(seen))
    worst_x, worst = max(seen, key=lambda p: abs(p[1]))
    side = "above" if worst > 0 else "below"
    metrics = {
        "combined_score": 1.0 / (1.0 + 20.0 * rmse),
        "public": {
            "rmse": rmse,
            "max_abs_error": abs(worst),
        },
        "private": {
            "held_out_max_error": max(abs(e) for _, e in hidden),
            "eval_ms": round((time.perf_counter() - started) * 1000.0, 3),
        },
        "text_feedback": (
            f"The largest error is {abs(worst):.4f} at x = {worst_x:.3f}, "
            f"where the cubic is {side} exp(x)."
        ),
    }
    return metrics, True, None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--program_path", default="initial.py")
    parser.add_argument("--results_dir", default="results")
    args = parser.parse_args()
    metrics, correct, error = judge(args.program_path)
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)
    with open(os.path.join(args.results_dir, "correct.json"), "w") as f:
        json.dump({"correct": correct, "error": error}, f)


if __name__ == "__main__":
    main()
