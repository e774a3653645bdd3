"""Evaluator for curve fitting: the candidate's predict(x) is compared with a
hidden smooth function sampled on [-3, 3] (deterministic pseudo-noise).

predict() runs in a process of its own (galapagos_eval, which galapagos puts
on the evaluator's path): only its predictions come back, and the error is
computed here."""

import math

import galapagos_eval


def _hidden(x):
    return 1.6 * math.sin(1.3 * x + 0.4) + 0.35 * x - 0.25 * math.exp(-((x - 1.0) ** 2))


def _noise(i):
    # Deterministic, small, zero-mean-ish perturbation (no RNG state involved).
    return 0.02 * math.sin(12.9898 * i + 78.233)


XS = [-3.0 + 6.0 * i / 60 for i in range(61)]
YS = [_hidden(x) + _noise(i) for i, x in enumerate(XS)]


TIMEOUT = 60.0  # seconds for the predictions; the run's own time limit also applies


def _predict_all(module, xs):
    """In the candidate's process: predict(x) for every x."""
    predict = getattr(module, "predict", None)
    if not callable(predict):
        return {"error": "the program defines no predict(x)"}
    return {"predictions": [predict(x) for x in xs]}


def evaluate(program_path):
    # A program that raises, crashes, overruns or returns something that is
    # not plain data raises galapagos_eval.CandidateError: invalid, saying why.
    found = galapagos_eval.run_with(program_path, _predict_all, XS, timeout=TIMEOUT, what="predict()")
    if isinstance(found, dict) and isinstance(found.get("error"), str):
        return {"combined_score": 0.0, "error": found["error"]}
    predictions = found.get("predictions") if isinstance(found, dict) else None
    if not isinstance(predictions, list) or len(predictions) != len(XS):
        return {"combined_score": 0.0, "error": "predict()'s process returned something unexpected"}
    residuals = []
    for x, y, p in zip(XS, YS, predictions):
        if isinstance(p, list) and len(p) == 1:
            p = p[0]  # a one-element array or list
        if isinstance(p, (str, bool, list, dict)) or p is None:
            return {"combined_score": 0.0, "error": f"predict({x:.2f}) returned {p!r:.60}, not a number"}
        p = float(p)
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
