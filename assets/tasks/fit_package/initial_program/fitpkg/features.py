"""The features of x that the model combines (model.py holds their weights)."""

import math

# EVOLVE-BLOCK-START
FREQUENCY = 1.0  # angular frequency of the periodic feature


def features(x):
    """[bias, periodic feature] of x: model.py has one weight for each."""
    return [1.0, math.sin(FREQUENCY * x)]
# EVOLVE-BLOCK-END
