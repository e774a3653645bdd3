"""A set U of non-negative integers containing 0, making
1 + log(|U - U| / |U + U|) / log(2 max U + 1) as large as possible.
`construct()` returns U as a sorted list."""

# EVOLVE-BLOCK-START
# Layout: an interval of integers and a few far elements. Every constant
# shapes it.
LENGTH = 10           # U starts with 0, 1, ..., LENGTH - 1
FAR = 0               # how many elements go further out
FAR_START = 40        # the first far element
FAR_STEP = 7          # the gap between far elements


def elements():
    u = set(range(max(1, int(round(LENGTH)))))
    for k in range(max(0, int(round(FAR)))):
        u.add(int(round(FAR_START)) + k * int(round(FAR_STEP)))
    return sorted(x for x in u if x >= 0)
# EVOLVE-BLOCK-END


def construct():
    """U as a sorted list of integers."""
    return elements()


if __name__ == "__main__":
    print(construct())
