"""A numerical integration rule: how many panels to cut [a, b] into, and how
to weigh each panel's midpoint against its two ends.

The evaluator integrates several functions with this rule and scores its
accuracy (digits) against its cost (function evaluations)."""

# EVOLVE-BLOCK-START
PANELS = 4      # panels per integral (more: more accurate, more evaluations)
MID_WEIGHT = 0.5  # weight of each panel's midpoint; the two ends share the rest


def rule():
    """The rule's parameters."""
    return {"panels": PANELS, "mid_weight": MID_WEIGHT}
# EVOLVE-BLOCK-END
