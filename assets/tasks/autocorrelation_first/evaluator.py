"""Evaluator for the first autocorrelation inequality (AlphaEvolve, problem
B.1): a non-negative step function f on [-1/4, 1/4] with n equal steps;
minimise max_t (f*f)(t) / (integral of f)^2.

f*f of a step function with equal steps is piecewise linear with its kinks
at multiples of the step width, so its maximum is the largest coefficient of
the discrete convolution of the heights with themselves, times the width:
the value is 2n * max_k (h*h)_k / (sum h)^2. Everything is computed exactly:
each height is a float, an exact rational; the heights are brought to
integers over one denominator and convolved as one big-integer product
(Kronecker substitution), so no rounding decides the maximum.

The program runs in a process of its own (galapagos_eval): only the plain
data construct() returns comes back, and every check runs here."""

import math
from fractions import Fraction

import galapagos_eval

# The best value published for a construction that passes this check, and
# where (config.yaml's best_known says the same): combined_score is
# BEST_KNOWN / value, 1.0 at the record, above it for a better one.
BEST_KNOWN = 1.5031324359797773
MAX_STEPS = 20_000  # more would not evaluate within a second
MAX_BITS = 6_000_000  # the packed heights' size in bits (the product's time)
TIMEOUT = 60.0  # seconds for construct(); the run's own time limit also applies


class Invalid(Exception):
    """The construction is not a valid one; the message says why."""


def _plain(value):
    """numpy arrays (when numpy is installed here) as lists."""
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def _height(v, i):
    if type(v) is bool or not isinstance(v, (int, float)):
        raise Invalid(f"step {i} is not a number ({type(v).__name__})")
    if isinstance(v, float) and not math.isfinite(v):
        raise Invalid(f"step {i} is {v}")
    if v < 0:
        raise Invalid(f"step {i} is negative ({v!r}): f must be non-negative")
    if isinstance(v, int) and v.bit_length() > 1100:
        raise Invalid(f"step {i} is too large an integer")
    return Fraction(v)


def heights_of(data):
    """The exact heights, or Invalid."""
    data = _plain(data)
    if not isinstance(data, list):
        raise Invalid(f"construct() must return a list of step heights, not {type(data).__name__}")
    if not data:
        raise Invalid("construct() returned no steps")
    if len(data) > MAX_STEPS:
        raise Invalid(f"{len(data)} steps: at most {MAX_STEPS} are evaluated")
    return [_height(v, i) for i, v in enumerate(data)]


def as_integers(values):
    """Integers proportional to `values` (exact rationals): each times the
    least common denominator."""
    den = 1
    for v in values:
        den = den * v.denominator // math.gcd(den, v.denominator)
    return [int(v * den) for v in values]


def correlate(a, b):
    """The full discrete convolution of non-negative integer sequences
    (a*b)_k = sum_i a_i b_(k-i), k = 0 .. len(a)+len(b)-2, as one
    big-integer product: each sequence is packed into an integer with
    slots wide enough that no coefficient spills into the next."""
    top = max(max(a), max(b))
    slot = 2 * top.bit_length() + max(len(a), len(b)).bit_length() + 1
    slot = (slot + 7) // 8 * 8
    if slot * (len(a) + len(b)) > MAX_BITS:
        raise Invalid(
            f"the heights need {slot} bits each at {len(a)} steps: too many digits to evaluate within a "
            "second (fewer steps, or heights with fewer significant bits)"
        )
    width = slot // 8

    def pack(seq):
        return int.from_bytes(b"".join(x.to_bytes(width, "little") for x in seq), "little")

    product = pack(a) * pack(b)
    raw = product.to_bytes(width * (len(a) + len(b)), "little")
    return [int.from_bytes(raw[k * width:(k + 1) * width], "little") for k in range(len(a) + len(b) - 1)]


def value_of(data):
    """(value as a Fraction, n) for a valid construction, or Invalid."""
    heights = heights_of(data)
    ints = as_integers(heights)
    total = sum(ints)
    if total == 0:
        raise Invalid("every step is 0: f has no mass (the ratio is undefined)")
    conv = correlate(ints, ints)
    n = len(ints)
    return Fraction(2 * n * max(conv), total * total), n


def evaluate(program_path):
    # A program that raises, crashes, overruns or returns something that is
    # not plain data raises galapagos_eval.CandidateError: invalid, saying why.
    data = galapagos_eval.run(program_path, "construct", timeout=TIMEOUT)
    try:
        exact, n = value_of(data)
    except Invalid as problem:
        return {"combined_score": 0.0, "validity": 0.0, "error": str(problem)}
    value = float(exact)
    return {
        "combined_score": BEST_KNOWN / value,
        "value": value,
        "validity": 1.0,
        "steps": float(n),
        "feedback": f"valid step function with {n} steps: max(f*f) / (integral f)^2 = {value:.10f} "
                    f"(best known {BEST_KNOWN}; lower is better)",
    }
