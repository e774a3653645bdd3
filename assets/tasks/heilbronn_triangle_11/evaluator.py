"""Evaluator: 11 points in the equilateral triangle with
vertices (0,0), (1,0), (1/2, sqrt(3)/2); maximise the smallest area of a
triangle they form, over the triangle's area (AlphaEvolve, problem B.9).
The construction is checked exactly and the score recomputed here; nothing
the program reports about itself is trusted.

Exact: every coordinate is a float (or an int), which is an exact rational
number, and every check and the value are computed on those rationals with
fractions.Fraction (the value is rounded to a float once, at the end).
A point is in the triangle when y >= 0, y^2 <= 3 x^2 (x >= 0) and
y^2 <= 3 (1 - x)^2 (x <= 1): the sides y = sqrt(3) x and y = sqrt(3) (1 - x)
squared, so no irrational number is rounded. A point on a side counts as in.

The program runs in a process of its own (galapagos_eval, which galapagos
puts on the evaluator's path): only the plain data construct() returns
comes back, so a program that patches this module's checks, builtins or
math changes them in its own process only."""

import itertools
import math
from fractions import Fraction

import galapagos_eval

N_POINTS = 11
DIM = 2
# The best value published for this problem, and where (config.yaml's
# best_known says the same): combined_score is value / BEST_KNOWN, 1.0 at
# the record, above it for a better construction.
BEST_KNOWN = 0.03652988988003013
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


def twice_area(p, q, r):
    """Twice the signed area of triangle pqr (exact)."""
    return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])


def smallest_triangle(points):
    """(twice the smallest triangle area, its three indices)."""
    best = None
    for i, j, k in itertools.combinations(range(len(points)), 3):
        a = abs(twice_area(points[i], points[j], points[k]))
        if best is None or a < best[0]:
            best = (a, (i, j, k))
    return best


def _sqrt_float(q):
    """sqrt of a non-negative Fraction as a float (within an ulp)."""
    if q == 0:
        return 0.0
    shift = 2 * max(0, 64 - (q.numerator.bit_length() - q.denominator.bit_length()) // 2)
    root = math.isqrt(q.numerator * (1 << shift) // q.denominator)
    return math.ldexp(root, -shift // 2)


def inside(p):
    """Whether p is in the closed triangle (0,0), (1,0), (1/2, sqrt(3)/2):
    y >= 0, y <= sqrt(3) x and y <= sqrt(3) (1 - x), the last two squared
    (exact: both sides are non-negative where it matters)."""
    x, y = p
    if y < 0:
        return "below the side y = 0"
    if x < 0 or y * y > 3 * x * x:
        return "beyond the side y = sqrt(3) x"
    if x > 1 or y * y > 3 * (1 - x) ** 2:
        return "beyond the side y = sqrt(3) (1 - x)"
    return None


def check(data):
    """(value, extra metrics, note) for a valid construction, or Invalid.
    value = smallest triangle area / the triangle's area (sqrt(3)/4)."""
    points = points_of(data)
    for i, p in enumerate(points):
        where = inside(p)
        if where:
            raise Invalid(f"point {i} {_show(p)} is outside the triangle: {where} (in exact arithmetic)")
    twice, triple = smallest_triangle(points)
    # (twice / 2) / (sqrt(3) / 4) = 2 twice / sqrt(3) = sqrt(4 twice^2 / 3)
    value = _sqrt_float(4 * twice * twice / 3)
    return value, {"min_area": float(twice / 2)}, f"the smallest triangle is points {triple}"


def evaluate(program_path):
    # A program that raises, crashes, overruns or returns something that is
    # not plain data raises galapagos_eval.CandidateError: invalid, saying why.
    data = galapagos_eval.run(program_path, "construct", timeout=TIMEOUT)
    try:
        value, extra, note = check(data)
    except Invalid as problem:
        return {"combined_score": 0.0, "validity": 0.0, "error": str(problem)}
    out = {"combined_score": value / BEST_KNOWN, "value": value, "validity": 1.0}
    out.update(extra)
    out["feedback"] = f"valid: {note}; value {value:.12g} (best known {BEST_KNOWN}; higher is better)"
    return out
