"""Evaluator: 14 points in space; minimise
(largest distance / smallest distance)^2 (AlphaEvolve, problem B.8).
The construction is checked exactly and the score recomputed here; nothing
the program reports about itself is trusted.

Exact: every coordinate is a float (or an int), which is an exact rational
number, and every check and the value are computed on those rationals with
fractions.Fraction (the value is rounded to a float once, at the end).
Squared distances are exact, so two points that coincide (ratio infinite)
are refused however the floats are written.

The program runs in a process of its own (galapagos_eval, which galapagos
puts on the evaluator's path): only the plain data construct() returns
comes back, so a program that patches this module's checks, builtins or
math changes them in its own process only."""

import itertools
import math
from fractions import Fraction

import galapagos_eval

N_POINTS = 14
DIM = 3
# The best value published for this problem, and where (config.yaml's
# best_known says the same): combined_score is BEST_KNOWN / value, 1.0 at
# the record, above it for a better construction.
BEST_KNOWN = 4.1658497672256525
TIMEOUT = 60.0  # seconds for construct(); the run's own time limit also applies


class Invalid(Exception):
    """The construction is not a valid one; the message says why."""


def _plain(value):
    """numpy arrays (when numpy is installed here) as lists."""
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def _number(v, what):
    v = _plain(v)
    if type(v) is bool or not isinstance(v, (int, float)):
        raise Invalid(f"{what} is not a number ({type(v).__name__})")
    if isinstance(v, float) and not math.isfinite(v):
        raise Invalid(f"{what} is {v}")
    if isinstance(v, int) and v.bit_length() > 64:
        raise Invalid(f"{what} is too large an integer")
    return Fraction(v)


def points_of(data):
    """The points as tuples of exact coordinates, or Invalid."""
    data = _plain(data)
    if not isinstance(data, list):
        raise Invalid(f"construct() must return a list of points, not {type(data).__name__}")
    if len(data) != N_POINTS:
        raise Invalid(f"expected {N_POINTS} points, got {len(data)}")
    points = []
    for i, p in enumerate(data):
        p = _plain(p)
        if not isinstance(p, list) or len(p) != DIM:
            raise Invalid(f"point {i} is not a list of {DIM} coordinates")
        points.append(tuple(_number(v, f"point {i}'s coordinate {k}") for k, v in enumerate(p)))
    return points


def _show(p):
    return "(" + ", ".join(repr(float(v)) for v in p) + ")"


def check(data):
    """(value, extra metrics, note) for a valid construction, or Invalid.
    value = (largest distance / smallest distance)^2 = largest squared
    distance / smallest squared distance, exact."""
    points = points_of(data)
    small = large = None
    for i, j in itertools.combinations(range(len(points)), 2):
        d2 = sum((a - b) ** 2 for a, b in zip(points[i], points[j]))
        if d2 == 0:
            raise Invalid(f"points {i} and {j} coincide at {_show(points[i])}: the points must be distinct")
        if small is None or d2 < small[0]:
            small = (d2, (i, j))
        if large is None or d2 > large[0]:
            large = (d2, (i, j))
    value = float(large[0] / small[0])
    extra = {"ratio": math.sqrt(value)}
    return value, extra, f"closest pair {small[1]}, farthest pair {large[1]}"


def evaluate(program_path):
    # A program that raises, crashes, overruns or returns something that is
    # not plain data raises galapagos_eval.CandidateError: invalid, saying why.
    data = galapagos_eval.run(program_path, "construct", timeout=TIMEOUT)
    try:
        value, extra, note = check(data)
    except Invalid as problem:
        return {"combined_score": 0.0, "validity": 0.0, "error": str(problem)}
    out = {"combined_score": BEST_KNOWN / value, "value": value, "validity": 1.0}
    out.update(extra)
    out["feedback"] = f"valid: {note}; value {value:.12g} (best known {BEST_KNOWN}; lower is better)"
    return out
