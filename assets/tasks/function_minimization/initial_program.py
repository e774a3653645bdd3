"""Minimise an unknown 2-D function with a stochastic search.

`search_algorithm(objective, bounds)` receives the objective f(x, y) and the
search box (lo, hi) for both coordinates and returns the best (x, y) found.
The evaluator seeds `random` before each run and limits how many times the
objective may be called."""

import math
import random

# EVOLVE-BLOCK-START
STEP_SIZE = 1.5        # standard deviation of a move at the start of a restart
ITERATIONS = 300       # moves per restart
RESTARTS = 3           # independent starts from random points
COOLING = 1.0          # the step is multiplied by this after every move
MIN_STEP = 0.05        # the step never shrinks below this


def search_algorithm(objective, bounds):
    """Random local search with restarts; returns the best (x, y) seen."""
    lo, hi = bounds
    best_x, best_y, best_v = 0.0, 0.0, math.inf
    for _ in range(max(1, int(round(RESTARTS)))):
        x, y = random.uniform(lo, hi), random.uniform(lo, hi)
        value = objective(x, y)
        step = STEP_SIZE
        for _ in range(max(1, int(round(ITERATIONS)))):
            nx = min(max(x + random.gauss(0.0, step), lo), hi)
            ny = min(max(y + random.gauss(0.0, step), lo), hi)
            candidate = objective(nx, ny)
            if candidate < value:
                x, y, value = nx, ny, candidate
            step = max(step * COOLING, MIN_STEP)
        if value < best_v:
            best_x, best_y, best_v = x, y, value
    return best_x, best_y
# EVOLVE-BLOCK-END


def run_search(objective, bounds=(-5.0, 5.0)):
    """Entry point called by the evaluator."""
    return search_algorithm(objective, bounds)
