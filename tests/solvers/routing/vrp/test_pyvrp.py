"""The pyvrp VRP solver on small documents, every plan checked by the independent checker."""

from __future__ import annotations

import threading
import time

import pytest

from solvers.contract import Budget
from solvers.routing.vrp import pyvrp as vrp_pyvrp
from solvers.routing.vrp.check import check_plan
from solvers.routing.vrp.parse import parse_document
from solvers.routing.vrp.plan import TaskRef
from tests.solvers.routing.vrp import rich_docs
from tests.solvers.routing.vrp.docs import small_document

BUDGET = Budget(time_limit=5.0, max_solutions=300)


def _solve(doc: dict, budget: Budget = BUDGET):
    problem = parse_document(doc)
    plan = vrp_pyvrp.solve(problem, budget, 0, None)
    check = check_plan(problem, plan)
    assert check.feasible, check.violations
    return problem, plan, check


def test_time_windows_all_served() -> None:
    _, plan, check = _solve(small_document(jobs=8, vehicles=2))
    assert not plan.unassigned and check.unassigned == 0


def test_shipments_pickup_before_delivery_on_one_vehicle() -> None:
    _, plan, _ = _solve(small_document(jobs=2, shipments=3))
    assert not plan.unassigned
    for k in range(3):
        route = next(r for r in plan.routes if TaskRef("pickup", k) in r.steps)
        assert route.steps.index(TaskRef("pickup", k)) < route.steps.index(
            TaskRef("delivery", k))


def test_mixed_pickup_and_delivery_loads() -> None:
    _, plan, _ = _solve(rich_docs.mixed_loads())
    assert plan.routes[0].steps == (TaskRef("job", 1), TaskRef("job", 0))


def test_depots_open_route_and_several_windows() -> None:
    _, plan, _ = _solve(rich_docs.depots_and_fleet())
    assert not plan.unassigned
    used = {r.vehicle_index for r in plan.routes}
    assert 1 in used  # 8 units need the large vehicle


def test_priority_decides_what_is_left_out() -> None:
    _, plan, _ = _solve(rich_docs.one_too_many((0, 5)))
    assert plan.unassigned == (TaskRef("job", 0),)
    _, plan, _ = _solve(rich_docs.one_too_many((5, 0)))
    assert plan.unassigned == (TaskRef("job", 1),)


def test_max_travel_time_leaves_the_far_job_out() -> None:
    doc = rich_docs.limits()
    for v in doc["vehicles"]:
        del v["max_tasks"]  # not a pyvrp feature
    _, plan, check = _solve(doc)
    assert plan.unassigned == (TaskRef("job", 6),)
    assert all(r.duration <= 120 for r in check.routes)


def test_cancel_and_time_limit_are_kept() -> None:
    problem = parse_document(small_document(jobs=30, vehicles=4, seed=2))
    cancel = threading.Event()
    cancel.set()
    t0 = time.perf_counter()
    vrp_pyvrp.solve(problem, Budget(time_limit=30.0, cancel=cancel), 0, None)
    assert time.perf_counter() - t0 < 2.0
    t0 = time.perf_counter()
    plan = vrp_pyvrp.solve(problem, Budget(time_limit=0.5), 0, None)
    assert time.perf_counter() - t0 < 0.7
    assert check_plan(problem, plan).feasible


@pytest.mark.parametrize("field", ["skills"])
def test_unsupported_parts_are_declared(field: str) -> None:
    assert field not in vrp_pyvrp.FEATURES


def test_steps_are_a_starting_solution_and_pins_are_refused() -> None:
    doc = small_document(jobs=6, vehicles=2)
    doc["vehicles"][0]["steps"] = [{"type": "job", "id": 100 + k} for k in range(6)]
    _, plan, _ = _solve(doc)
    assert not plan.unassigned
    doc["vehicles"][0]["steps"][2]["pinned"] = True
    assert "vehicles[0].steps[2].pinned" in vrp_pyvrp.supports(parse_document(doc))
