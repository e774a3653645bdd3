"""Model an unknown smooth 1-D function y = g(x) on [-3, 3].

`predict(x)` returns the model's estimate of g(x). The evaluator compares it
with hidden samples of g and reports where the model is furthest off."""

import math

# EVOLVE-BLOCK-START
C0 = 0.1   # constant term
C1 = 1.0   # linear term
C2 = 0.05  # quadratic term
C3 = 0.02  # cubic term


def predict(x):
    """A cubic polynomial; the coefficients above are the model."""
    return C0 + C1 * x + C2 * x * x + C3 * x * x * x
# EVOLVE-BLOCK-END
