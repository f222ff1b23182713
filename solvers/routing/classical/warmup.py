"""Compiling the numba kernels of the classical CVRP search (``descent``, ``kicks``,
``penalized``, the route elimination of ``fleet``) and the giant-tour split of ``construct``
ahead of a solve, so a fresh install does not compile them inside a solver's clock.

``ils``, ``sil``/``sil_ls`` and ``reld`` call ``warm_up`` from their own ``warm_up``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from solvers.compiling import cache_is_cold, compiled_beside
from solvers.routing.classical.construct import random_insertion_routes
from solvers.routing.classical.descent import cvrp_descent, polish_routes
from solvers.routing.classical.fleet import eliminate_capacity_routes, pour
from solvers.routing.classical.kicks import PENALIZED_RUIN, cvrp_kicks
from solvers.routing.classical.moves import NEIGHBOURS, Plan, plan_length
from solvers.routing.classical.penalized import penalized_kicks
from solvers.routing.problem import CVRPInstance


def warm_up(alongside: Callable[[], None] | None = None) -> None:
    """Compile the kernels of the CVRP descent, the kicks and the route elimination (numba
    caches them on disk) before a solver's clock starts. On a cold cache a child process
    compiles the penalized kicks and the route elimination (half of the compile time)
    meanwhile (solvers.compiling); ``alongside``, a caller's own kernels, compiles here while
    the child works."""
    inst, plan = _warm_up_plan()
    with compiled_beside("solvers.routing.classical.warmup:_compile_beside",
                         when=cache_is_cold(penalized_kicks, pour)):
        cvrp_descent(inst, plan, time.perf_counter() + 60.0)
        cvrp_kicks(inst, plan, time.perf_counter() + 0.01, 0)
        # the CVRP start's split of a giant tour: left to the first solve, it compiled inside
        # that solve's clock (1.2 s for a 0.3 s limit on a fresh install)
        random_insertion_routes(inst, 0)
        polish_routes(np.asarray(inst.coords, dtype=np.float64), inst.depot, plan)
        if alongside is not None:
            alongside()
    _compile_beside()  # read from the cache the child wrote, or compiled here


def _warm_up_plan() -> tuple[CVRPInstance, list[list[int]]]:
    """Twelve nodes in three routes of a capacity-4 instance: every kernel's argument types."""
    coords = np.random.default_rng(0).random((12, 2))
    inst = CVRPInstance(coords=coords, demands=[0] + [1] * 11, capacity=4)
    return inst, [list(range(1, 12))[k:k + 4] for k in range(0, 11, 4)]


def _compile_beside() -> None:
    """The child process's part of ``warm_up``: the penalized kicks and route elimination."""
    inst, plan = _warm_up_plan()
    _penalized_warm_up(inst, plan)
    four = [[1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    eliminate_capacity_routes(inst, four, 3, time.perf_counter() + 60.0, 0)


def _penalized_warm_up(instance: CVRPInstance, routes: list[list[int]]) -> None:
    """One penalized kick, so its kernels compile before a clock (no warm-up run of
    ``cvrp_kicks`` fails enough kicks to reach them)."""
    plan = Plan(instance, routes, NEIGHBOURS)
    arrays = (plan.succ, plan.pred, plan.route_of, plan.cum, plan.load)
    best = [a.copy() for a in arrays]
    total = plan_length(plan.succ, plan.n, plan.count, plan.xy, plan.mat, plan.conv, plan.depot)
    penalized_kicks(np.array([1], dtype=np.int64), np.zeros((1, PENALIZED_RUIN)), np.zeros(1),
                    PENALIZED_RUIN, total, total, 1.0, *arrays, *best,
                    np.zeros(plan.count, dtype=np.bool_), plan.demand, plan.cap, plan.near,
                    plan.xy, plan.mat, plan.conv, plan.n, plan.depot, plan.count, plan.eps)
