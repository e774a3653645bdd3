"""Pack 21 non-overlapping circles into a rectangle of perimeter 4,
maximising the sum of their radii. `construct()` returns the circles as
[x, y, r] rows; the rectangle is their bounding box (width + height <= 2).
`run_packing()` returns the same packing as (centers, radii)."""

N_CIRCLES = 21

# EVOLVE-BLOCK-START
# Layout: equal circles on a grid of ROWS rows, the rectangle's sides set so
# that the grid just fits and its perimeter is 4. Every constant shapes it.
ROWS = 3              # rows of circles (columns follow: enough for all circles)
FILL = 0.9            # radius as a fraction of the largest that fits the grid
ROW_SHIFT = 0.0       # horizontal shift of every other row, in radii


def layout():
    """Centres and the common radius: a ROWS x cols grid in a rectangle of
    perimeter 4 (2 cols r + 2 ROWS r = 2 at FILL = 1)."""
    rows = max(1, int(round(ROWS)))
    cols = -(-N_CIRCLES // rows)
    cell = 2.0 / (cols + rows + abs(ROW_SHIFT) / 2)  # cell side: 2 r at FILL = 1
    radius = FILL * cell / 2
    centers = []
    for k in range(N_CIRCLES):
        row, col = divmod(k, cols)
        shift = ROW_SHIFT * radius if row % 2 else 0.0
        centers.append(((col + 0.5) * cell + shift, (row + 0.5) * cell))
    return centers, radius
# EVOLVE-BLOCK-END


def run_packing():
    """Return (centers, radii)."""
    centers, radius = layout()
    return centers, [radius] * len(centers)


def construct():
    """The packing as [x, y, r] rows, one per circle."""
    centers, radii = run_packing()
    return [[x, y, r] for (x, y), r in zip(centers, radii)]


if __name__ == "__main__":
    rows = construct()
    print(f"sum of radii: {sum(r for _, _, r in rows):.6f}")
