"""The neural search keeps to the clock as it runs, not only to the plan made at its start:
a decoding pass stops before a step that would end past its deadline, and a first pass
whose measured pace says it will not fit stops early, so the time goes to a smaller plan
or to reconstruction instead of a pass that is thrown away at the limit."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from solvers.contract import Budget
from solvers.routing.generate import random_tsp
from solvers.routing.neural.budget import Pace
from solvers.routing.neural.reld import ReLDSolver
from solvers.routing.problem import TSPInstance


def _run(pace: Pace, step_seconds: float, steps: int) -> int:
    """Decoding steps taken before ``pace`` said stop (as a rollout asks it)."""
    for step in range(steps):
        if pace():
            return step
        time.sleep(step_seconds)
    return steps


def test_a_rollout_stops_before_a_step_that_would_end_past_its_deadline() -> None:
    deadline = time.perf_counter() + 0.25
    pace = Pace(lambda: deadline - time.perf_counter(), lambda: False)
    _run(pace, 0.06, 100)
    # the step that would have ended past the deadline was not begun
    assert time.perf_counter() <= deadline + 0.03


def test_a_rollout_too_slow_as_a_whole_stops_after_a_tenth_of_its_steps() -> None:
    deadline = time.perf_counter() + 0.5
    pace = Pace(lambda: deadline - time.perf_counter(), lambda: False, steps=40)
    taken = _run(pace, 0.02, 40)  # 40 steps of 20 ms: 0.8 s, past the 0.5 s left
    assert pace.slow and taken <= 6
    assert 0.015 <= pace.step_seconds() <= 0.1
    quick = Pace(lambda: 10.0, lambda: False, steps=40)
    assert _run(quick, 0.001, 40) == 40 and not quick.slow


class _Slowed:
    """A model whose decoding steps each take ``seconds`` longer: a CPU that turned out
    busier than the plan (made for a free one) expected."""

    def __init__(self, model: Any, seconds: float) -> None:
        self.model, self.seconds = model, seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def step(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.seconds)
        return self.model.step(*args, **kwargs)


def test_a_first_pass_that_cannot_fit_leaves_the_time_to_reconstruction() -> None:
    """Before, a first pass planned for a free CPU decoded until the limit itself and was
    thrown away: a greedy construction with no reconstruction at all."""
    solver = ReLDSolver()
    solver.warm_up()  # (the polish's kernels compiled, as the service does at start)
    model = solver.model("tsp", "cpu")
    solver.model = lambda problem, device: _Slowed(model, 0.025)  # type: ignore[method-assign]
    seed = 0
    instance = TSPInstance(coords=random_tsp(np.random.default_rng(seed), 60))
    limit = 1.2
    started = time.perf_counter()
    sol = solver.solve(instance, Budget(time_limit=limit, seed=seed))
    wall = time.perf_counter() - started
    assert sol.feasible
    assert sol.stats["passes"] == 0  # 59 steps of at least 25 ms do not fit the limit
    assert sol.stats["reconstruction"]["rounds"] >= 1, sol.stats
    assert wall <= 1.1 * limit + 0.1, wall
