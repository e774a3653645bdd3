"""A cubic that should follow exp(x) on [-1, 1].

The evaluator calls approx(x) at many points in [-1, 1]; only the
coefficients inside the EVOLVE-BLOCK are meant to change."""

# EVOLVE-BLOCK-START
COEFFS = [1.0, 0.8, 0.3, 0.0]  # c0 + c1*x + c2*x**2 + c3*x**3


def approx(x):
    total = 0.0
    for power, c in enumerate(COEFFS):
        total += c * x**power
    return total
# EVOLVE-BLOCK-END
