"""Evaluator for function minimisation.

f(x, y) = sin(x) cos(y) + sin(x y) + (x^2 + y^2) / 20 on [-5, 5]^2, whose
global minimum is about -1.5187 at (-1.7041, 0.6775). The candidate's search
runs several times with fixed seeds; each run may call the objective at most
BUDGET times (later calls return +inf). The value at the returned point is
recomputed here.

The candidate's search runs in a process of its own (galapagos_eval, which
galapagos puts on the evaluator's path), with the objective beside it: only
the points it returns come back, and every score is computed here from
them. (The call budget is counted in the candidate's process, so a search
could get round it, as it could compute f itself: it is a rule of the task,
not a check; `mean_objective_calls` is what the search's process reported.)"""

import math
import random

import galapagos_eval

GLOBAL_X, GLOBAL_Y = -1.7040828, 0.6775078
GLOBAL_VALUE = -1.5186858
BOUNDS = (-5.0, 5.0)
SEEDS = (11, 23, 37, 41, 59)
BUDGET = 3000
CLOSE = 0.05  # a run counts as reliable when it lands this close to the minimum
TIMEOUT = 60.0  # seconds for the five searches; the run's own time limit also applies


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


def _search_all(module):
    """In the candidate's process: run its search once per seed; the points
    it returned and the objective calls it made, or why it cannot run."""
    search = getattr(module, "run_search", None) or getattr(module, "search_algorithm", None)
    if not callable(search):
        return {"error": "the program defines neither run_search() nor search_algorithm()"}
    runs = []
    for seed in SEEDS:
        random.seed(seed)
        objective = BudgetedObjective(BUDGET)
        runs.append({"point": search(objective, BOUNDS), "calls": objective.calls})
    return {"runs": runs}


def _coordinates(point):
    """(x, y) as floats from what the search returned, or None."""
    if not isinstance(point, (list, tuple)) and not hasattr(point, "tolist"):
        return None
    values = point.tolist() if hasattr(point, "tolist") else point
    if not isinstance(values, list) or len(values) < 2:
        return None
    try:
        if any(isinstance(v, (str, bool)) or v is None for v in values[:2]):
            return None
        return float(values[0]), float(values[1])
    except (TypeError, ValueError):
        return None


def evaluate(program_path):
    # A search that raises, crashes, overruns or returns something that is
    # not plain data raises galapagos_eval.CandidateError: invalid, saying why.
    found = galapagos_eval.run_with(program_path, _search_all, timeout=TIMEOUT, what="the search")
    if isinstance(found, dict) and isinstance(found.get("error"), str):
        return {"combined_score": 0.0, "error": found["error"]}
    runs = found.get("runs") if isinstance(found, dict) else None
    if not isinstance(runs, list) or len(runs) != len(SEEDS) or not all(isinstance(r, dict) for r in runs):
        return {"combined_score": 0.0, "error": "the search's process returned something unexpected"}
    value_scores, distance_scores, values, hits, calls = [], [], [], 0, []
    for run in runs:
        point = _coordinates(run.get("point"))
        if point is None:
            return {"combined_score": 0.0, "error": f"the search must return (x, y), got {run.get('point')!r:.80}"}
        x, y = point
        if not (math.isfinite(x) and math.isfinite(y)):
            return {"combined_score": 0.0, "error": f"the search returned a non-finite point ({x}, {y})"}
        if not (BOUNDS[0] <= x <= BOUNDS[1] and BOUNDS[0] <= y <= BOUNDS[1]):
            return {"combined_score": 0.0, "error": f"the point ({x:.4f}, {y:.4f}) is outside the search box"}
        value = f(x, y)
        distance = math.hypot(x - GLOBAL_X, y - GLOBAL_Y)
        value_scores.append(1.0 / (1.0 + 10.0 * max(0.0, value - GLOBAL_VALUE)))
        distance_scores.append(1.0 / (1.0 + 10.0 * distance))
        values.append(value)
        reported = run.get("calls")
        calls.append(min(reported, BUDGET) if type(reported) is int and reported >= 0 else BUDGET)
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
