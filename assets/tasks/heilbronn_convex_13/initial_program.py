"""Place 13 points in the plane so that the smallest triangle any three of
them form is as large as possible relative to the area of their convex
hull. `construct()` returns the points as [x, y] rows."""

import math

N_POINTS = 13

# EVOLVE-BLOCK-START
# Layout: OUTER points evenly on a circle, the rest on a smaller inner
# circle. Every constant shapes it.
OUTER = 13            # points on the outer circle
INNER_RADIUS = 0.5    # the inner circle's radius (the outer one's is 1)
INNER_PHASE = 0.3     # rotation of the inner points (radians)


def points():
    outer = max(3, min(N_POINTS, int(round(OUTER))))
    out = [[math.cos(math.tau * i / outer), math.sin(math.tau * i / outer)] for i in range(outer)]
    inner = N_POINTS - outer
    for i in range(inner):
        a = math.tau * i / inner + INNER_PHASE
        out.append([INNER_RADIUS * math.cos(a), INNER_RADIUS * math.sin(a)])
    return out
# EVOLVE-BLOCK-END


def construct():
    """The points as [x, y] rows."""
    return points()


if __name__ == "__main__":
    print(construct())
