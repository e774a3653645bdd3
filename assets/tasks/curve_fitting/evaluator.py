"""Evaluator for curve fitting: the candidate's predict(x) is compared with a
hidden smooth function sampled on [-3, 3] (deterministic pseudo-noise)."""

import importlib.util
import math


def _hidden(x):
    return 1.6 * math.sin(1.3 * x + 0.4) + 0.35 * x - 0.25 * math.exp(-((x - 1.0) ** 2))


def _noise(i):
    # Deterministic, small, zero-mean-ish perturbation (no RNG state involved).
    return 0.02 * math.sin(12.9898 * i + 78.233)


XS = [-3.0 + 6.0 * i / 60 for i in range(61)]
YS = [_hidden(x) + _noise(i) for i, x in enumerate(XS)]


def _load(program_path):
    spec = importlib.util.spec_from_file_location("candidate_program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def evaluate(program_path):
    module = _load(program_path)
    predict = getattr(module, "predict", None)
    if not callable(predict):
        return {"combined_score": 0.0, "error": "the program defines no predict(x)"}
    residuals = []
    for x, y in zip(XS, YS):
        p = float(predict(x))
        if not math.isfinite(p):
            return {"combined_score": 0.0, "error": f"predict({x:.2f}) returned a non-finite value"}
        residuals.append(p - y)
    mse = sum(r * r for r in residuals) / len(residuals)
    rmse = math.sqrt(mse)
    max_abs = max(abs(r) for r in residuals)
    worst = sorted(range(len(XS)), key=lambda i: -abs(residuals[i]))[:5]
    feedback = "largest errors (x: predicted - target): " + ", ".join(
        f"{XS[i]:+.2f}: {residuals[i]:+.3f}" for i in sorted(worst)
    )
    return {
        "combined_score": 1.0 / (1.0 + 4.0 * rmse),
        "rmse": rmse,
        "max_abs_error": max_abs,
        "feedback": feedback,
    }
