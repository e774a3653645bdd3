"""Evaluator of the benchmark task (cheap: well under a millisecond of work).

Loads the candidate, samples its curve at x = -2.0, -1.9, ..., 2.0 and scores
1 / (1 + mean squared error) against y = 2.5 x^2 - 1.25 x + 0.75. A candidate
that fails to load, returns the wrong number of points or a non-finite error
scores 0 with error = 1."""
import importlib.util
import math
import uuid

POINTS = [k / 10.0 for k in range(-20, 21)]
WANTED = [2.5 * x * x - 1.25 * x + 0.75 for x in POINTS]
FAILED = {"combined_score": 0.0, "mse": 1e9, "error": 1.0}


def evaluate(program_path):
    try:
        name = "candidate_" + uuid.uuid4().hex
        spec = importlib.util.spec_from_file_location(name, program_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        values = module.run()
        if len(values) != len(POINTS):
            return dict(FAILED)
        mse = sum((v - w) ** 2 for v, w in zip(values, WANTED)) / len(POINTS)
        if not math.isfinite(mse):
            return dict(FAILED)
        return {"combined_score": 1.0 / (1.0 + mse), "mse": mse, "error": 0.0}
    except Exception:
        return dict(FAILED)
