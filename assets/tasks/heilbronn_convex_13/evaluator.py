"""Evaluator: 13 points in the plane; maximise the smallest
area of a triangle they form, over the area of their convex hull
(AlphaEvolve, problem B.10).
The construction is checked exactly and the score recomputed here; nothing
the program reports about itself is trusted.

Exact: every coordinate is a float (or an int), which is an exact rational
number, and every check and the value are computed on those rationals with
fractions.Fraction (the value is rounded to a float once, at the end).
The hull's area and every triangle's are exact, so three collinear points
(area 0) are seen as such however nearly they are placed.

The program runs in a process of its own (galapagos_eval, which galapagos
puts on the evaluator's path): only the plain data construct() returns
comes back, so a program that patches this module's checks, builtins or
math changes them in its own process only."""

import itertools
import math
from fractions import Fraction

import galapagos_eval

N_POINTS = 13
DIM = 2
# The best value published for this problem, and where (config.yaml's
# best_known says the same): combined_score is value / BEST_KNOWN, 1.0 at
# the record, above it for a better construction.
BEST_KNOWN = 0.03093688903489562
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


def hull_twice_area(points):
    """Twice the area of the points' convex hull (exact; monotone chain)."""
    pts = sorted(set(points))

    def half(seq):
        chain = []
        for p in seq:
            while len(chain) >= 2 and twice_area(chain[-2], chain[-1], p) <= 0:
                chain.pop()
            chain.append(p)
        return chain

    hull = half(pts)[:-1] + half(reversed(pts))[:-1]
    if len(hull) < 3:
        return Fraction(0)
    return sum(hull[i][0] * hull[(i + 1) % len(hull)][1] - hull[(i + 1) % len(hull)][0] * hull[i][1]
               for i in range(len(hull)))


def check(data):
    """(value, extra metrics, note) for a valid construction, or Invalid.
    value = smallest triangle area / the area of the points' convex hull."""
    points = points_of(data)
    hull = hull_twice_area(points)
    if hull == 0:
        raise Invalid("the points are collinear: their convex hull has no area")
    twice, triple = smallest_triangle(points)
    value = float(twice / hull)
    return value, {"hull_area": float(hull / 2)}, f"the smallest triangle is points {triple}"


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
