"""The queue descent: feasible, shorter, local moves only, and it keeps its deadline."""

from __future__ import annotations

import time

import numpy as np

from solvers.routing.check import check_cvrp
from solvers.routing.classical.construct import random_insertion_routes
from solvers.routing.classical.moves import Plan, plan_length
from solvers.routing.classical.queue_descent import queue_descent
from solvers.routing.generate import random_cvrp
from solvers.routing.problem import CVRPInstance


def _plan(n: int) -> tuple[CVRPInstance, Plan]:
    coords, demands, capacity = random_cvrp(np.random.default_rng(5), n)
    inst = CVRPInstance(coords=coords, demands=demands, capacity=capacity)
    return inst, Plan(inst, random_insertion_routes(inst, 0), 20)


def _length(p: Plan) -> float:
    return plan_length(p.succ, p.n, p.count, p.xy, p.mat, p.conv, p.depot)


def test_queue_descent_reaches_what_the_sweeps_reach() -> None:
    inst, plan = _plan(3000)
    start = _length(plan)
    assert queue_descent(plan, time.perf_counter() + 60.0) > 0
    routes = plan.routes()
    assert check_cvrp(inst, routes) == []
    assert abs(inst.cost(routes) - _length(plan)) < 1e-6 * start
    queued = _length(plan)
    _, swept = _plan(3000)
    swept.descend(time.perf_counter() + 60.0)
    # within half a percent of the sweeps' local optimum, far below the start
    assert queued < 0.95 * start and queued < 1.005 * _length(swept)
    # the loads the plan keeps are the routes' loads
    assert sorted(plan.load[plan.load > 0].tolist()) == sorted(
        int(inst.demands[r].sum()) for r in routes)


def test_queue_descent_stops_at_its_deadline_and_on_cancel() -> None:
    _, plan = _plan(3000)
    assert queue_descent(plan, time.perf_counter() - 1.0) == 0
    assert queue_descent(plan, time.perf_counter() + 60.0, cancelled=lambda: True) == 0
