"""Place 11 points in the equilateral triangle with vertices (0, 0), (1, 0)
and (1/2, sqrt(3)/2) so that the smallest triangle any three of them form
is as large as possible. `construct()` returns the points as [x, y] rows."""

import math

N_POINTS = 11

# EVOLVE-BLOCK-START
# Layout: the points evenly on a circle around the triangle's centre (no
# three points on a circle are collinear). Every constant shapes it.
RADIUS = 0.25         # the circle's radius (the incircle's is sqrt(3)/6 = 0.2887)
PHASE = 0.0           # rotation of the points (radians)
SQUASH = 1.0          # vertical scale of the circle (an ellipse below 1)


def points():
    cx, cy = 0.5, math.sqrt(3) / 6
    out = []
    for i in range(N_POINTS):
        a = math.tau * i / N_POINTS + PHASE
        out.append([cx + RADIUS * math.cos(a), cy + SQUASH * RADIUS * math.sin(a)])
    return out
# EVOLVE-BLOCK-END


def construct():
    """The points as [x, y] rows."""
    return points()


if __name__ == "__main__":
    print(construct())
