"""A non-negative step function on [-1/4, 1/4] with equal steps, making
max (f*f) / (integral of f)^2 as small as possible. `construct()` returns
the step heights, left to right."""

# EVOLVE-BLOCK-START
# Layout: a constant function with a bump in the middle. Every constant
# shapes it.
STEPS = 20            # number of equal steps
BASE = 1.0            # height of every step
BUMP = 0.0            # added to the middle steps
BUMP_WIDTH = 4        # how many middle steps get the bump


def heights():
    n = max(1, int(round(STEPS)))
    width = max(0, int(round(BUMP_WIDTH)))
    start = (n - width) // 2
    return [max(0.0, BASE + (BUMP if start <= i < start + width else 0.0)) for i in range(n)]
# EVOLVE-BLOCK-END


def construct():
    """The step heights of f on [-1/4, 1/4], left to right."""
    return heights()


if __name__ == "__main__":
    print(construct())
