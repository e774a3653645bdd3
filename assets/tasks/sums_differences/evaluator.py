"""Evaluator for sums and differences of finite sets (AlphaEvolve, problem
B.6): a set U of non-negative integers containing 0; maximise
    1 + log(|U - U| / |U + U|) / log(2 max U + 1),
the lower bound on C6 of Gyarmati, Hennecart and Ruzsa (2007), which holds
for such a U with |U - U| <= 2 max U + 1 (always true: U - U lies in
[-max U, max U]).

|U + U| and |U - U| are counted exactly: U is a bit set (bit u set for u in
U), U + U is the union of its shifts by every u, U - U that of its shifts by
max U - u, and the counts are the set bits. The cost is |U| shifts of a
(2 max U + 1)-bit integer, so the set's size is bounded (see the limits
below): AlphaEvolve's 2003-element set evaluates in about 0.2 s.

The program runs in a process of its own (galapagos_eval): only the plain
data construct() returns comes back, and every check runs here."""

import math

import galapagos_eval

# The best value published for this problem, and where (config.yaml's
# best_known says the same): combined_score is value / BEST_KNOWN, 1.0 at
# the record, above it for a better construction.
BEST_KNOWN = 1.1584
MAX_ELEMENT = 2_000_000  # the bit sets' size: 2 max U + 1 bits
MAX_WORK = 2_500_000_000  # |U| * max U: the shifts' cost, about half a second at the limit
TIMEOUT = 60.0  # seconds for construct(); the run's own time limit also applies


class Invalid(Exception):
    """The construction is not a valid one; the message says why."""


def set_of(data):
    """U as a sorted list of distinct integers, or Invalid."""
    tolist = getattr(data, "tolist", None)
    if callable(tolist):
        data = tolist()
    if not isinstance(data, list):
        raise Invalid(f"construct() must return a list of integers, not {type(data).__name__}")
    for i, u in enumerate(data):
        if type(u) is not int:
            raise Invalid(f"element {i} is not an integer ({type(u).__name__} {u!r})")
        if u < 0:
            raise Invalid(f"element {i} is negative ({u}): U holds non-negative integers")
    u = sorted(set(data))
    if not u or u[0] != 0:
        raise Invalid("U must contain 0")
    if len(u) < 2:
        raise Invalid("U = {0}: max U is 0 and the bound is undefined (log 1 = 0)")
    top = u[-1]
    if top > MAX_ELEMENT:
        raise Invalid(f"max U = {top} is over {MAX_ELEMENT:,}, the largest element this task evaluates")
    if len(u) * top > MAX_WORK:
        raise Invalid(
            f"|U| x max U = {len(u)} x {top} is over {MAX_WORK:,}: too large to evaluate within a second "
            "(fewer or smaller elements)"
        )
    return u


def counts(u):
    """(|U + U|, |U - U|) for a sorted list of distinct integers >= 0."""
    top = u[-1]
    bits = 0
    for x in u:
        bits |= 1 << x
    sums = 0
    diffs = 0
    for x in u:
        sums |= bits << x  # x + U
        diffs |= bits << (top - x)  # U - x, shifted by max U
    return sums.bit_count(), diffs.bit_count()


def value_of(data):
    """(value, |U|, |U + U|, |U - U|, max U) for a valid set, or Invalid."""
    u = set_of(data)
    plus, minus = counts(u)
    top = u[-1]
    value = 1 + math.log(minus / plus) / math.log(2 * top + 1)
    return value, len(u), plus, minus, top


def evaluate(program_path):
    # A program that raises, crashes, overruns or returns something that is
    # not plain data raises galapagos_eval.CandidateError: invalid, saying why.
    data = galapagos_eval.run(program_path, "construct", timeout=TIMEOUT)
    try:
        value, size, plus, minus, top = value_of(data)
    except Invalid as problem:
        return {"combined_score": 0.0, "validity": 0.0, "error": str(problem)}
    return {
        "combined_score": value / BEST_KNOWN,
        "value": value,
        "validity": 1.0,
        "size": float(size),
        "sumset": float(plus),
        "difference_set": float(minus),
        "max_element": float(top),
        "feedback": f"valid: |U| = {size}, max U = {top}, |U+U| = {plus}, |U-U| = {minus}; "
                    f"value {value:.10f} (best known {BEST_KNOWN}; higher is better)",
    }
