"""Evaluator for curve fitting: the candidate's predict(x) is compared with 61
samples of a smooth function on [-3, 3] (with a little deterministic noise)
that candidates cannot see: they are in targets.json, which config.yaml
declares hidden.

predict() runs in a process of its own (galapagos_eval, which galapagos puts
on the evaluator's path): because the task has hidden paths, that process is
a fresh interpreter that cannot read targets.json and holds nothing of this
one's memory; only its predictions come back, and the error is computed
here."""

import json
import math
import os

import galapagos_eval

TARGETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets.json")


def _targets():
    """The sample points and the values there (read when scoring, not at
    import: the candidate's fresh interpreter imports this file to run
    _predict_all, and cannot read targets.json)."""
    with open(TARGETS) as f:
        data = json.load(f)
    return [float(x) for x in data["xs"]], [float(y) for y in data["ys"]]


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
    XS, YS = _targets()
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
