"""A step function h on [0, 2] with equal steps, values in [0, 1] and
integral 1 (the evaluator scales the heights so that it is), making the
largest overlap max_k integral h(x) (1 - h(x + k)) dx as small as
possible. `construct()` returns the step heights, left to right."""

# EVOLVE-BLOCK-START
# Layout: h = 1/2 everywhere, with a tilt. Every constant shapes it.
STEPS = 20            # number of equal steps on [0, 2]
LEVEL = 0.5           # the average height (the evaluator rescales to integral 1)
TILT = 0.0            # left-to-right slope added to the level


def heights():
    n = max(1, int(round(STEPS)))
    return [min(1.0, max(0.0, LEVEL + TILT * ((i + 0.5) / n - 0.5))) for i in range(n)]
# EVOLVE-BLOCK-END


def construct():
    """The step heights of h on [0, 2], left to right."""
    return heights()


if __name__ == "__main__":
    print(construct())
