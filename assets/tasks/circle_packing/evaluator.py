"""Evaluator for circle packing: 26 circles in the unit square, maximise the
sum of radii. The program's geometry is checked and the score recomputed here;
nothing the program reports about itself is trusted.

The program runs in a process of its own (galapagos_eval, which galapagos
puts on the evaluator's path): only the plain data run_packing() returns
comes back, so a program that patches this module's checks, builtins or
math changes them in its own process only."""

import math

import galapagos_eval

N_CIRCLES = 26
TARGET = 2.635  # AlphaEvolve's result; combined_score 1.0 matches it
TOL = 1e-9
TIMEOUT = 60.0  # seconds for run_packing(); the run's own time limit also applies


def _as_float(v):
    if isinstance(v, (str, bytes, bool)) or v is None:
        raise TypeError("not a number")
    f = float(v)
    if not math.isfinite(f):
        raise ValueError("not finite")
    return f


def check_packing(centers, radii):
    """Return (sum_of_radii, None) for a valid packing, or (0, reason)."""
    try:
        centers = [list(c) for c in centers]
        radii = list(radii)
    except TypeError:
        return 0.0, "run_packing() must return (centers, radii) as sequences"
    if len(centers) != N_CIRCLES or len(radii) != N_CIRCLES:
        return 0.0, f"expected {N_CIRCLES} centers and {N_CIRCLES} radii, got {len(centers)} and {len(radii)}"
    pts = []
    rs = []
    for i in range(N_CIRCLES):
        if len(centers[i]) != 2:
            return 0.0, f"center {i} does not have 2 coordinates"
        try:
            x, y = _as_float(centers[i][0]), _as_float(centers[i][1])
            r = _as_float(radii[i])
        except (TypeError, ValueError):
            return 0.0, f"circle {i} has a NaN, infinite or non-numeric value"
        if r < 0:
            return 0.0, f"circle {i} has a negative radius {r}"
        if x - r < -TOL or y - r < -TOL or x + r > 1 + TOL or y + r > 1 + TOL:
            return 0.0, f"circle {i} (center ({x:.4f}, {y:.4f}), radius {r:.4f}) leaves the unit square"
        pts.append((x, y))
        rs.append(r)
    for i in range(N_CIRCLES):
        for j in range(i + 1, N_CIRCLES):
            d = math.dist(pts[i], pts[j])
            if d < rs[i] + rs[j] - TOL:
                return 0.0, f"circles {i} and {j} overlap by {rs[i] + rs[j] - d:.3g}"
    return sum(rs), None


def evaluate(program_path):
    # A program that raises, crashes, overruns or returns something that is
    # not plain data raises galapagos_eval.CandidateError: invalid, saying why.
    result = galapagos_eval.run(program_path, "run_packing", timeout=TIMEOUT)
    try:
        centers, radii = result
    except (TypeError, ValueError):
        return {"combined_score": 0.0, "sum_radii": 0.0, "validity": 0.0,
                "error": "run_packing() must return a (centers, radii) pair"}
    total, problem = check_packing(centers, radii)
    if problem:
        return {"combined_score": 0.0, "sum_radii": 0.0, "validity": 0.0, "error": problem}
    smallest = min(float(r) for r in radii)
    return {
        "combined_score": total / TARGET,
        "sum_radii": total,
        "validity": 1.0,
        "min_radius": smallest,
        "feedback": f"valid packing, sum of radii {total:.6f} (target {TARGET}); smallest radius {smallest:.4f}",
    }
