"""Evaluator for the two-objective quadrature task: accuracy against cost.

The candidate's rule() runs in a process of its own (galapagos_eval) and only
its two parameters come back; the integrals, their error and the number of
function evaluations are computed here.

combined_score: correct digits, -log10 of the mean relative error over the test
integrals (0 to 15), higher is better. evaluations: function evaluations one
integral costs (2 * panels + 1), lower is better."""

import math

import galapagos_eval

MAX_PANELS = 500

# (f, a, b, exact integral)
CASES = [
    (math.exp, 0.0, 1.0, math.e - 1.0),
    (math.sin, 0.0, math.pi, 2.0),
    (lambda x: 1.0 / (1.0 + x * x), 0.0, 1.0, math.pi / 4.0),
    (lambda x: math.sqrt(1.0 + x), 0.0, 3.0, 14.0 / 3.0),
]


def integrate(f, a, b, panels, mid_weight):
    h = (b - a) / panels
    end_weight = (1.0 - mid_weight) / 2.0
    total = 0.0
    for i in range(panels):
        left = a + i * h
        total += end_weight * f(left) + mid_weight * f(left + h / 2.0) + end_weight * f(left + h)
    return total * h


def evaluate(program_path):
    found = galapagos_eval.run(program_path, "rule", timeout=30)
    if not isinstance(found, dict):
        return {"combined_score": 0.0, "error": "rule() must return a dict with panels and mid_weight"}
    panels, weight = found.get("panels"), found.get("mid_weight")
    for name, value in (("panels", panels), ("mid_weight", weight)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return {"combined_score": 0.0, "error": f"{name} is {value!r:.40}, not a finite number"}
    panels = int(round(panels))
    if not 1 <= panels <= MAX_PANELS:
        return {"combined_score": 0.0, "error": f"panels must be between 1 and {MAX_PANELS}, got {panels}"}
    if not 0.0 <= weight <= 1.0:
        return {"combined_score": 0.0, "error": f"mid_weight must be between 0 and 1, got {weight}"}
    errors = [abs(integrate(f, a, b, panels, weight) - exact) / abs(exact) for f, a, b, exact in CASES]
    mean_error = sum(errors) / len(errors)
    digits = min(15.0, max(0.0, -math.log10(max(mean_error, 1e-300))))
    return {
        "combined_score": digits,
        "evaluations": float(2 * panels + 1),
        "mean_relative_error": mean_error,
    }
