"""Evaluator for function minimisation.

f(x, y) = sin(x) cos(y) + sin(x y) + (x^2 + y^2) / 20 on [-5, 5]^2, whose
global minimum is about -1.5187 at (-1.7041, 0.6775). The candidate's search
runs several times with fixed seeds; each run may call the objective at most
BUDGET times (later calls return +inf). The value at the returned point is
recomputed here."""

import importlib.util
import math
import random

GLOBAL_X, GLOBAL_Y = -1.7040828, 0.6775078
GLOBAL_VALUE = -1.5186858
BOUNDS = (-5.0, 5.0)
SEEDS = (11, 23, 37, 41, 59)
BUDGET = 3000
CLOSE = 0.05  # a run counts as reliable when it lands this close to the minimum


def f(x, y):
    return math.sin(x) * math.cos(y) + math.sin(x * y) + (x * x + y * y) / 20.0


class BudgetedObjective:
    def __init__(self, budget):
        self.calls = 0
        self.budget = budget

    def __call__(self, x, y):
        self.calls += 1
        if self.calls > self.budget:
            return math.inf
        x, y = float(x), float(y)
        if not (math.isfinite(x) and math.isfinite(y)):
            return math.inf
        return f(x, y)


def _load(program_path):
    spec = importlib.util.spec_from_file_location("candidate_program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def evaluate(program_path):
    module = _load(program_path)
    search = getattr(module, "run_search", None) or getattr(module, "search_algorithm", None)
    if search is None:
        return {"combined_score": 0.0, "error": "the program defines neither run_search() nor search_algorithm()"}
    value_scores, distance_scores, values, hits, calls = [], [], [], 0, []
    for seed in SEEDS:
        random.seed(seed)
        objective = BudgetedObjective(BUDGET)
        point = search(objective, BOUNDS)
        try:
            x, y = float(point[0]), float(point[1])
        except (TypeError, ValueError, IndexError):
            return {"combined_score": 0.0, "error": f"the search must return (x, y), got {point!r:.80}"}
        if not (math.isfinite(x) and math.isfinite(y)):
            return {"combined_score": 0.0, "error": f"the search returned a non-finite point ({x}, {y})"}
        if not (BOUNDS[0] <= x <= BOUNDS[1] and BOUNDS[0] <= y <= BOUNDS[1]):
            return {"combined_score": 0.0, "error": f"the point ({x:.4f}, {y:.4f}) is outside the search box"}
        value = f(x, y)
        distance = math.hypot(x - GLOBAL_X, y - GLOBAL_Y)
        value_scores.append(1.0 / (1.0 + 10.0 * max(0.0, value - GLOBAL_VALUE)))
        distance_scores.append(1.0 / (1.0 + 10.0 * distance))
        values.append(value)
        calls.append(min(objective.calls, BUDGET))
        hits += distance < CLOSE
    value_score = sum(value_scores) / len(SEEDS)
    distance_score = sum(distance_scores) / len(SEEDS)
    reliability_score = hits / len(SEEDS)
    combined = 0.5 * value_score + 0.3 * distance_score + 0.2 * reliability_score
    return {
        "combined_score": combined,
        "value_score": value_score,
        "distance_score": distance_score,
        "reliability_score": reliability_score,
        "mean_value": sum(values) / len(values),
        "mean_objective_calls": sum(calls) / len(calls),
        "feedback": (
            f"values found per seed: {', '.join(f'{v:.4f}' for v in values)} "
            f"(global minimum {GLOBAL_VALUE}); {hits}/{len(SEEDS)} runs within {CLOSE} of it; "
            f"budget {BUDGET} objective calls per run"
        ),
    }
