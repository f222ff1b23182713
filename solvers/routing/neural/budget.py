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
from collections.abc import Callable

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


class Pace:
    """The stop test of one rollout (``env.STOP_EVERY``: asked before every decoding step):
    true on a cancel, or once the time left (``left``) is shorter than the longest step of
    this rollout so far, since the next step would then end past it. Under load one step is
    not a fixed cost: in a process where another thread held the interpreter lock for tens
    of milliseconds at a time (in-request ``ils`` solves beside it), single decoding steps
    took 0.3-0.45 s, and a test only at the limit itself let a 0.5 s solve end at 0.78 s.

    With ``steps`` (the rollout's expected decoding steps) it also says when the whole
    rollout is not going to fit: once a tenth of the steps are done, if their mean pace
    predicts an end past ``left``, it stops and sets ``slow`` (a first pass planned for a
    machine that turned out busier, so the search may plan again from the measured pace)."""

    #: Steps measured before a rollout may be judged too slow as a whole.
    MIN_STEPS = 4

    def __init__(self, left: Callable[[], float], cancelled: Callable[[], bool],
                 steps: float | None = None) -> None:
        self.left, self.cancelled, self.steps = left, cancelled, steps
        self.calls = 0
        self.first: float | None = None  # when the first step began
        self.last: float | None = None
        self.longest = 0.0
        self.slow = False

    def __call__(self) -> bool:
        now = time.perf_counter()
        if self.last is not None:
            self.longest = max(self.longest, now - self.last)
        else:
            self.first = now
        self.last = now
        self.calls += 1
        if self.cancelled():
            return True
        left = self.left()
        if left <= self.longest:
            return True
        done = self.calls - 1
        if (self.steps is not None and self.first is not None
                and done >= max(self.MIN_STEPS, 0.1 * self.steps)):
            mean = (now - self.first) / done
            if mean * (self.steps - done) > left:
                self.slow = True
                return True
        return False

    def step_seconds(self) -> float:
        """The mean measured step (0 before two calls)."""
        done = self.calls - 1
        if done <= 0 or self.first is None or self.last is None:
            return 0.0
        return (self.last - self.first) / done


def after_cancel(budget: Budget, seconds: float) -> float:
    """A ``time.perf_counter()`` deadline ``seconds`` away, or now once the solve is
    cancelled: the repair and the polish end on their deadline, not on a cancel."""
    return time.perf_counter() + (0.0 if budget.cancelled() else seconds)
