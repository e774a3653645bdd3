"""Pack 32 non-overlapping circles into the unit square, maximising the sum
of their radii. `construct()` returns the circles as [x, y, r] rows;
`run_packing()` returns the same packing as (centers, radii)."""

import math

N_CIRCLES = 32

# EVOLVE-BLOCK-START
# Layout: one circle in the middle, an inner ring, and an outer ring whose
# points are pulled inside the square. Every constant below shapes the result.
INNER_COUNT = 10        # circles on the inner ring (the rest go on the outer ring)
INNER_RADIUS = 0.25    # distance of the inner ring from the centre
OUTER_RADIUS = 0.6     # distance of the outer ring from the centre (before clipping)
INNER_PHASE = 0.0      # rotation of the inner ring (radians)
OUTER_PHASE = 0.3      # rotation of the outer ring (radians)
MARGIN = 0.12          # outer-ring points are clipped to [MARGIN, 1 - MARGIN]
GROW_PASSES = 2        # rounds of greedy radius growth
SAFETY = 1e-12         # radii are shrunk by this fraction: float rounding must not make circles overlap


def construct_centers():
    """Centres of the circles: middle, inner ring, clipped outer ring."""
    inner = max(0, min(N_CIRCLES - 1, int(round(INNER_COUNT))))
    outer = N_CIRCLES - 1 - inner
    centers = [(0.5, 0.5)]
    for i in range(inner):
        a = math.tau * i / inner + INNER_PHASE
        centers.append((0.5 + INNER_RADIUS * math.cos(a), 0.5 + INNER_RADIUS * math.sin(a)))
    for i in range(outer):
        a = math.tau * i / outer + OUTER_PHASE
        x = 0.5 + OUTER_RADIUS * math.cos(a)
        y = 0.5 + OUTER_RADIUS * math.sin(a)
        centers.append((min(max(x, MARGIN), 1 - MARGIN), min(max(y, MARGIN), 1 - MARGIN)))
    return centers


def compute_radii(centers):
    """Feasible radii: start from the wall distance and half the distance to
    the nearest neighbour, then let each circle grow into free space."""
    n = len(centers)
    dist = [[math.dist(centers[i], centers[j]) for j in range(n)] for i in range(n)]
    radii = []
    for i, (x, y) in enumerate(centers):
        wall = min(x, y, 1 - x, 1 - y)
        nearest = min(dist[i][j] for j in range(n) if j != i)
        radii.append(max(0.0, min(wall, nearest / 2)))
    for _ in range(max(0, int(round(GROW_PASSES)))):
        for i, (x, y) in enumerate(centers):
            room = min(x, y, 1 - x, 1 - y)
            for j in range(n):
                if j != i:
                    room = min(room, dist[i][j] - radii[j])
            radii[i] = max(0.0, room)
    return [r * (1 - SAFETY) for r in radii]
# EVOLVE-BLOCK-END


def run_packing():
    """Return (centers, radii): N_CIRCLES (x, y) pairs and N_CIRCLES radii."""
    centers = construct_centers()
    radii = compute_radii(centers)
    return centers, radii


def construct():
    """The packing as [x, y, r] rows, one per circle."""
    centers, radii = run_packing()
    return [[x, y, r] for (x, y), r in zip(centers, radii)]


if __name__ == "__main__":
    rows = construct()
    print(f"sum of radii: {sum(r for _, _, r in rows):.6f}")
