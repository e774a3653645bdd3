"""Evaluator for fit_package: the candidate is a folder holding the package
`fitpkg`; its predict(x) is compared with a hidden periodic signal sampled on
[-3, 3].

The package is imported and called in a process of its own (galapagos_eval,
which galapagos puts on the evaluator's path, puts the candidate's folder
first on that process's sys.path): only its predictions come back, and the
error is computed here."""

import math

import galapagos_eval


def _hidden(x):
    return 1.8 * math.sin(1.6 * x) + 0.4


def _noise(i):
    # Deterministic, small perturbation (no RNG state involved).
    return 0.01 * math.sin(12.9898 * i + 78.233)


XS = [-3.0 + 6.0 * i / 60 for i in range(61)]
YS = [_hidden(x) + _noise(i) for i, x in enumerate(XS)]

TIMEOUT = 60.0  # seconds for the predictions; the run's own time limit also applies


def _predict_all(_folder, xs):
    """In the candidate's process: import the package from its folder and
    predict every x."""
    import fitpkg

    predict = getattr(fitpkg, "predict", None)
    if not callable(predict):
        return {"error": "fitpkg defines no predict(x)"}
    return {"predictions": [predict(x) for x in xs]}


def evaluate(program_path):
    found = galapagos_eval.run_with(program_path, _predict_all, XS, timeout=TIMEOUT, what="fitpkg.predict()")
    if isinstance(found, dict) and isinstance(found.get("error"), str):
        return {"combined_score": 0.0, "error": found["error"]}
    predictions = found.get("predictions") if isinstance(found, dict) else None
    if not isinstance(predictions, list) or len(predictions) != len(XS):
        return {"combined_score": 0.0, "error": "predict()'s process returned something unexpected"}
    residuals = []
    for x, y, p in zip(XS, YS, predictions):
        if isinstance(p, (str, bool, list, dict)) or p is None:
            return {"combined_score": 0.0, "error": f"predict({x:.2f}) returned {p!r:.60}, not a number"}
        p = float(p)
        if not math.isfinite(p):
            return {"combined_score": 0.0, "error": f"predict({x:.2f}) returned a non-finite value"}
        residuals.append(p - y)
    rmse = math.sqrt(sum(r * r for r in residuals) / len(residuals))
    worst = sorted(range(len(XS)), key=lambda i: -abs(residuals[i]))[:5]
    feedback = "largest errors (x: predicted - target): " + ", ".join(
        f"{XS[i]:+.2f}: {residuals[i]:+.3f}" for i in sorted(worst)
    )
    return {
        "combined_score": 1.0 / (1.0 + 4.0 * rmse),
        "rmse": rmse,
        "max_abs_error": max(abs(r) for r in residuals),
        "feedback": feedback,
    }
