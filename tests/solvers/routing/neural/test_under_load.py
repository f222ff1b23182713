"""The neural solvers keep their time limit when many solve at once: the plan reads the CPU
a solve can expect (``expected_slowdown``) and a pass or a reconstruction round that the
CPU no longer carries is stopped between its decoding steps."""

from __future__ import annotations

import statistics
import threading
import time

import numpy as np
import pytest

from solvers.contract import Budget
from solvers.routing.generate import random_tsp
from solvers.routing.neural import search
from solvers.routing.problem import TSPInstance
from solvers.routing.solve import solve

LIMIT = 0.3
#: The tolerance the limit holds within under load: 10% and 0.1 s.
TOLERANCE = 0.1 * LIMIT + 0.1


def test_the_expected_slowdown_counts_the_solves_in_the_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert search.expected_slowdown() == 1.0
    with search.RUNNING.one(), search.RUNNING.one(), search.RUNNING.one():
        assert search.expected_slowdown() == 3.0
    monkeypatch.setattr(search.os, "getloadavg", lambda: (64.0, 0.0, 0.0))
    assert search.expected_slowdown() >= 64.0 / len(search.os.sched_getaffinity(0))


@pytest.mark.heavy
@pytest.mark.parametrize("solver", ["reld", "polynet"])
def test_eight_concurrent_solves_keep_the_limit(solver: str) -> None:
    instances = [TSPInstance(coords=random_tsp(np.random.default_rng(i), 100)) for i in range(8)]
    solve(instances[0], solver, Budget(time_limit=LIMIT, seed=0))  # weights loaded
    walls: list[float] = [0.0] * len(instances)

    def one(i: int) -> None:
        started = time.perf_counter()
        sol = solve(instances[i], solver, Budget(time_limit=LIMIT, seed=i))
        walls[i] = time.perf_counter() - started
        assert sol.feasible

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(instances))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # (before: reld's median 2.9-3.0 s of a 0.3 s limit, polynet's 2.35 s, on 2 busy cores)
    assert statistics.median(walls) <= LIMIT + TOLERANCE, walls
    assert max(walls) <= 2 * (LIMIT + TOLERANCE), walls
