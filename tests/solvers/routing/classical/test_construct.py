"""Nearest-neighbour construction on repeated points, and its time limit."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from solvers.contract import Budget
from solvers.routing.check import check_solution
from solvers.routing.classical.construct import NearestNeighbourSolver, nearest_neighbour_routes
from solvers.routing.problem import CVRPInstance, TSPInstance


def _identical(n: int, cvrp: bool) -> TSPInstance | CVRPInstance:
    coords = np.full((n, 2), 0.5)
    if not cvrp:
        return TSPInstance(name="same", coords=coords)
    coords = np.vstack([[[0.0, 0.0]], coords])
    demands = np.r_[0, np.ones(n, dtype=int)]
    return CVRPInstance(name="same", coords=coords, demands=demands, capacity=50)


@pytest.mark.parametrize("cvrp", [False, True])
def test_identical_points_finish_within_the_limit(cvrp: bool) -> None:
    """10K identical points took 4.5 s at a 1 s limit: every KD-tree query met visited
    duplicates first and widened to the whole tree."""
    inst = _identical(10_000, cvrp)
    limit = 1.0
    t0 = time.perf_counter()
    sol = NearestNeighbourSolver().solve(inst, Budget(time_limit=limit))
    wall = time.perf_counter() - t0
    assert wall <= limit * 1.1 + 0.1
    assert check_solution(inst, sol.routes) == []
    if cvrp:  # every route full: 200 routes of 50, each a single trip out and back
        assert len(sol.routes) == 200


def test_stop_returns_a_valid_plan_at_once() -> None:
    """A set cancel flag ends the construction with every customer still served."""
    rng = np.random.default_rng(0)
    n = 3000
    inst = CVRPInstance(name="r", coords=rng.random((n, 2)),
                        demands=np.r_[0, rng.integers(1, 10, n - 1)], capacity=40)
    cancel = threading.Event()
    cancel.set()
    sol = NearestNeighbourSolver().solve(inst, Budget(time_limit=10, cancel=cancel))
    assert check_solution(inst, sol.routes) == []
    assert "cancelled" in sol.stats["stopped"]
    full = nearest_neighbour_routes(inst)
    assert inst.cost(full) < sol.cost  # the index-order finish is the cheap, worse way
