"""Evaluator: 32 circles in the unit square, maximise the
sum of their radii (AlphaEvolve, problem B.12).
The construction is checked exactly and the score recomputed here; nothing
the program reports about itself is trusted.

Exact: every coordinate and radius is a float (or an int), which is an exact
rational number, and every check is done on those rationals with
fractions.Fraction: circles i and j are disjoint when
(xi - xj)^2 + (yi - yj)^2 >= (ri + rj)^2, and circle i lies in
the unit square when ri <= xi <= 1 - ri and ri <= yi <= 1 - ri.
Touching is allowed; no overlap, however small, is: there is no tolerance
to exploit.

The program runs in a process of its own (galapagos_eval, which galapagos
puts on the evaluator's path): only the plain data it returns comes back, so
a program that patches this module's checks, builtins or math changes them
in its own process only."""

import ast
import decimal
import math
from fractions import Fraction

import galapagos_eval

N_CIRCLES = 32
# The best value published for a construction that passes this check, and
# where (config.yaml's best_known says the same): combined_score is
# value / BEST_KNOWN, 1.0 at the record, above it for a better one.
BEST_KNOWN = 2.937944526205518
TIMEOUT = 60.0  # seconds for the program; the run's own time limit also applies


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


def _list(v, what):
    v = _plain(v)
    if not isinstance(v, list):
        raise Invalid(f"{what} is not a list ({type(v).__name__})")
    return v


def rows_of(data):
    """The circles as exact (x, y, r) rows, from either shape a program may
    return: a list of [x, y, r] rows, or (centers, radii) / (centers,
    radii, sum) as run_packing() does (a reported sum is not used: the
    radii are summed here)."""
    data = _list(data, "the result")
    if len(data) in (2, 3) and isinstance(_plain(data[0]), list) and len(_plain(data[0])) == N_CIRCLES:
        centers = _list(data[0], "centers")
        radii = _list(data[1], "radii")
        if len(radii) != N_CIRCLES:
            raise Invalid(f"expected {N_CIRCLES} radii, got {len(radii)}")
        rows = []
        for i, (c, r) in enumerate(zip(centers, radii)):
            c = _list(c, f"center {i}")
            if len(c) != 2:
                raise Invalid(f"center {i} has {len(c)} coordinates, not 2")
            rows.append([c[0], c[1], r])
    else:
        rows = data
    if len(rows) != N_CIRCLES:
        raise Invalid(f"expected {N_CIRCLES} circles as [x, y, r] rows, got {len(rows)} rows")
    out = []
    for i, row in enumerate(rows):
        row = _list(row, f"circle {i}")
        if len(row) != 3:
            raise Invalid(f"circle {i} has {len(row)} values, not 3 ([x, y, r])")
        x, y, r = (_number(v, f"circle {i}'s {name}") for v, name in zip(row, ("x", "y", "radius")))
        if r < 0:
            raise Invalid(f"circle {i} has a negative radius ({float(r)!r})")
        out.append((x, y, r))
    return out


def _gap(d2, s):
    """How far apart (positive) or overlapping (negative) two circles are,
    from the squared distance of their centres and the sum of their radii
    (exact rationals), to 40 digits."""
    with decimal.localcontext() as ctx:
        ctx.prec = 40
        distance = (decimal.Decimal(d2.numerator) / decimal.Decimal(d2.denominator)).sqrt()
        return float(distance - decimal.Decimal(s.numerator) / decimal.Decimal(s.denominator))


def check_disjoint(rows):
    for i in range(len(rows)):
        xi, yi, ri = rows[i]
        for j in range(i + 1, len(rows)):
            xj, yj, rj = rows[j]
            d2 = (xi - xj) ** 2 + (yi - yj) ** 2
            if d2 < (ri + rj) ** 2:
                raise Invalid(
                    f"circles {i} and {j} overlap by {-_gap(d2, ri + rj):.3g}: (xi-xj)^2+(yi-yj)^2 < (ri+rj)^2 "
                    f"in exact arithmetic "
                    f"(circle {i}: ({float(xi)!r}, {float(yi)!r}), r={float(ri)!r}; "
                    f"circle {j}: ({float(xj)!r}, {float(yj)!r}), r={float(rj)!r})"
                )


def _describe(i, x, y, r):
    return f"circle {i} (centre ({float(x)!r}, {float(y)!r}), radius {float(r)!r})"


def check(data):
    """(sum of radii as a Fraction, extra metrics, note) for a valid
    packing, or Invalid naming the first problem."""
    rows = rows_of(data)
    for i, (x, y, r) in enumerate(rows):
        for side, inside in (("left", r <= x), ("bottom", r <= y), ("right", x + r <= 1), ("top", y + r <= 1)):
            if not inside:
                raise Invalid(f"{_describe(i, x, y, r)} crosses the unit square's {side} side")
    check_disjoint(rows)
    return sum(r for _, _, r in rows), {"min_radius": float(min(r for _, _, r in rows))}, "in the unit square"


def _entry(program_path):
    """construct() when the program defines it at its top level, else
    run_packing() (the shape OpenEvolve's and ShinkaEvolve's programs
    have); construct() when neither is found (the error then says so)."""
    try:
        with open(program_path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return "construct"  # running it reports the problem
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    if "construct" in names or "run_packing" not in names:
        return "construct"
    return "run_packing"


def evaluate(program_path):
    # A program that raises, crashes, overruns or returns something that is
    # not plain data raises galapagos_eval.CandidateError: invalid, saying why.
    entry = _entry(program_path)
    data = galapagos_eval.run(program_path, entry, timeout=TIMEOUT)
    try:
        exact, extra, note = check(data)
    except Invalid as problem:
        return {"combined_score": 0.0, "validity": 0.0, "error": str(problem)}
    value = float(exact)
    out = {"combined_score": value / BEST_KNOWN, "value": value, "validity": 1.0}
    out.update(extra)
    out["feedback"] = (f"valid: {N_CIRCLES} disjoint circles {note}, sum of radii {value:.10f} "
                       f"(best known {BEST_KNOWN}; higher is better)")
    return out
