"""How the neural search spends its time: the cost model of a decoding pass, the size of the
first pass, and how many more trajectories fit in the time left.

A greedy pass is the unit of work. Its cost is estimated up front (a fixed cost per decoding
step plus trajectories × N per step, and N² per symmetry for the encoder) to size a first pass
that fits half of the time for the passes; the measured time of each pass then rescales the
estimate for the next one (the shape of the model is kept, only its scale follows the machine).
"""

from __future__ import annotations

import math
import time

import numpy as np

from solvers.contract import Budget
from solvers.routing.problem import CVRPInstance, Instance

#: The cost model of a greedy pass (see ``pass_seconds``), fitted on one core of the 2-core
#: development machine (TSP100: 12 × 8 trajectories 0.28 s, 100 × 8 1.12 s); it sizes the
#: first pass, the measured time of each greedy pass rescales it for the next.
_STEP_COST = 1.7e-3
_DECODE_COST = 1.2e-7
_ENCODE_COST = 2.0e-8

#: ``plan_passes`` halves a first pass only while that saves at least this share of its time.
MIN_SAVING = 0.15


def decode_steps(instance: Instance) -> float:
    """Decoding steps of one trajectory, as ``pass_seconds`` counts them: 1.15 N, which is
    a 15% margin for the TSP (N steps; the cost model was fitted on it) and covers CVRP's depot
    returns on uniform CVRP100 (about 10 routes); a CVRP trajectory returns to the depot at
    least once per ⌈Σ demand / capacity⌉ routes, so an instance with many routes counts
    N + that bound (31 nodes with one vehicle per customer: 61 steps; planned as 36, PolyNet's
    first pass took 1.5-1.8 s of a 1 s limit)."""
    n = instance.n
    if isinstance(instance, CVRPInstance):
        routes = math.ceil(float(np.sum(instance.demands)) / float(instance.capacity))
        return max(1.15 * n, float(n + routes))
    return 1.15 * n


def pass_seconds(n: int, trajectories: int, symmetries: int,
                 steps: float | None = None) -> float:
    """Predicted seconds of one greedy pass on the development machine: every decoding step
    pays a fixed overhead (Python and kernel launches) plus a share per trajectory and node,
    and the encoder runs once per symmetry. ``steps`` per trajectory default to 1.15 N
    (``decode_steps``). The measured time of each pass corrects the scale, not the shape."""
    if steps is None:
        steps = 1.15 * n
    return (steps * (_STEP_COST + _DECODE_COST * trajectories * symmetries * n)
            + _ENCODE_COST * symmetries * n * n)


def plan_passes(n: int, trajectories: int, seconds: float,
                steps: float | None = None) -> tuple[int, int]:
    """(trajectories, symmetries per pass) so that the first greedy pass fits in about half
    of ``seconds`` (what is left of the budget once the model is loaded). Trajectories are
    halved before symmetries: on 100-node sets the eight symmetries of a few starts beat many
    starts on one symmetry. PolyNet plans its strategies the same way."""
    together = 8 if n <= 200 else 4 if n <= 1000 else 1
    budget = 0.5 * seconds

    def worth_halving(m: int, t: int, m2: int, t2: int) -> bool:
        # over budget, and the smaller pass saves a real share of the time: where the fixed
        # cost per decoding step dominates, halving only throws solutions away (PolyNet at
        # 0.5 s on TSP100 planned 1 strategy on 1 symmetry, then ran 14 passes of 1-2
        # solutions, 0.8% behind ReLD)
        now = pass_seconds(n, m, t, steps)
        return now > budget and (now > seconds
                                 or pass_seconds(n, m2, t2, steps) < (1 - MIN_SAVING) * now)

    while trajectories > 1 and worth_halving(trajectories, together, trajectories // 2,
                                             together):
        trajectories //= 2
    while together > 1 and worth_halving(trajectories, together, trajectories, together // 2):
        together //= 2
    return max(1, trajectories), together


def fit_trajectories(n: int, symmetries: int, seconds: float, scale: float,
                     most: int, steps: float | None = None) -> int:
    """How many more greedy trajectories (up to ``most``) a pass may decode in ``seconds``,
    with the cost model rescaled to the passes measured so far; 0 when not even one fits."""
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if scale * pass_seconds(n, mid, symmetries, steps) <= seconds:
            lo = mid
        else:
            hi = mid - 1
    return lo


def after_cancel(budget: Budget, seconds: float) -> float:
    """A ``time.perf_counter()`` deadline ``seconds`` away, or now once the solve is
    cancelled: the repair and the polish end on their deadline, not on a cancel."""
    return time.perf_counter() + (0.0 if budget.cancelled() else seconds)
