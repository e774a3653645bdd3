"""Evaluator for Erdős' minimum overlap problem in Haugland's form
(AlphaEvolve, problem B.5): a step function h on [0, 2] with n equal steps,
values in [0, 1] and integral 1; minimise
    max_k  integral h(x) (1 - h(x + k)) dx,
where 1 - h is taken on [0, 2] only (g = 1 - h there and 0 outside, as in
the statement with f + g = 1 on the interval and both extended by zero).

The heights a program returns are scaled, exactly, so that the integral is
1 (h_i * n / (2 sum h)); the scaled heights must then lie in [0, 1]. The
overlap of two step functions with equal steps is piecewise linear in the
shift k with its kinks at multiples of the step width 2/n, so its maximum is
at one of them: the value is (2/n) max_k sum_i h_i (1 - h_(i+k)). All of it
is exact: the heights (floats, exact rationals) are brought to integers
over one denominator, the correlation is one big-integer product (Kronecker
substitution), and the value is rounded to a float once, at the end.

The program runs in a process of its own (galapagos_eval): only the plain
data construct() returns comes back, and every check runs here."""

import math
from fractions import Fraction

import galapagos_eval

# The best value published for this problem, and where (config.yaml's
# best_known says the same): combined_score is BEST_KNOWN / value, 1.0 at
# the record, above it for a better construction.
BEST_KNOWN = 0.38092303510845016
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
        raise Invalid(f"step {i} is negative ({v!r}): h takes values in [0, 1]")
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
    n = len(ints)
    total = sum(ints)
    if total == 0:
        raise Invalid("every step is 0: h cannot integrate to 1")
    # Scaled heights: n * H_i / T with T = 2 sum H, so that (2/n) sum = 1.
    t = 2 * total
    for i, h in enumerate(ints):
        if n * h > t:
            raise Invalid(
                f"step {i} is above 1 once the steps are scaled to integrate to 1 "
                f"({float(Fraction(n * h, t))!r}): h takes values in [0, 1]"
            )
    # sum_i h_i (1 - h_(i+k)) over the i where both steps exist, times T^2:
    # n T S_k - n^2 C_k, with S_k the sum of H_i over those i and C_k the
    # correlation sum_i H_i H_(i+k).
    conv = correlate(ints, ints[::-1])  # conv[k'] = sum_i H_i H_(i + k' - n + 1)
    prefix = [0]
    for h in ints:
        prefix.append(prefix[-1] + h)
    best = None
    for kk in range(2 * n - 1):
        k = kk - (n - 1)
        lo, hi = max(0, -k), min(n, n - k)  # i with 0 <= i < n and 0 <= i + k < n
        overlap = n * t * (prefix[hi] - prefix[lo]) - n * n * conv[kk]
        if best is None or overlap > best:
            best = overlap
    return Fraction(2 * best, n * t * t), n


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
        "feedback": f"valid step function with {n} steps: the largest overlap is {value:.10f} "
                    f"(best known {BEST_KNOWN}; lower is better)",
    }
