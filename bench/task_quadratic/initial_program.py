"""Benchmark task: four constants shape a quadratic; the evaluator compares it
with a hidden target. Only the numbers between the EVOLVE-BLOCK markers are
meant to change."""

# EVOLVE-BLOCK-START
A = 1.0
B = 0.0
C = 0.0
SHIFT = 0.0


def f(x):
    return A * (x - SHIFT) ** 2 + B * x + C
# EVOLVE-BLOCK-END


def run():
    return [f(k / 10.0) for k in range(-20, 21)]
