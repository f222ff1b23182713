"""The ortools VRP solver on small documents, every plan checked by the independent checker."""

from __future__ import annotations

import threading
import time

from solvers.contract import Budget
from solvers.routing.vrp import ortools as vrp_ortools
from solvers.routing.vrp.check import check_plan
from solvers.routing.vrp.parse import parse_document
from solvers.routing.vrp.plan import TaskRef
from tests.solvers.routing.vrp import rich_docs
from tests.solvers.routing.vrp.docs import small_document

BUDGET = Budget(time_limit=5.0, max_solutions=200)


def _solve(doc: dict, budget: Budget = BUDGET):
    problem = parse_document(doc)
    plan = vrp_ortools.solve(problem, budget, 0, None)
    check = check_plan(problem, plan)
    assert check.feasible, check.violations
    return problem, plan, check


def test_time_windows_and_shipments() -> None:
    _, plan, _ = _solve(small_document(jobs=6, vehicles=2, shipments=2))
    assert not plan.unassigned
    for k in range(2):
        route = next(r for r in plan.routes if TaskRef("pickup", k) in r.steps)
        assert route.steps.index(TaskRef("pickup", k)) < route.steps.index(
            TaskRef("delivery", k))


def test_mixed_pickup_and_delivery_loads() -> None:
    # a plain cumulated load would accept the pickup first, which the checker refuses
    _, plan, _ = _solve(rich_docs.mixed_loads())
    assert plan.routes[0].steps == (TaskRef("job", 1), TaskRef("job", 0))


def test_skills_and_breaks() -> None:
    problem, plan, _ = _solve(rich_docs.skills_and_breaks())
    assert not plan.unassigned
    for r in plan.routes:
        need = {problem.jobs[s.index].skills for s in r.steps if s.kind == "job"}
        assert all(n <= problem.vehicles[r.vehicle_index].skills for n in need)
        assert r.steps.count(TaskRef("break", 0)) == 1


def test_a_task_no_vehicle_can_serve_is_unassigned() -> None:
    doc = rich_docs.skills_and_breaks()
    doc["jobs"][0]["skills"] = [7]
    _, plan, _ = _solve(doc)
    assert plan.unassigned == (TaskRef("job", 0),)


def test_depots_open_route_and_several_windows() -> None:
    _, plan, _ = _solve(rich_docs.depots_and_fleet())
    assert not plan.unassigned


def test_priority_decides_what_is_left_out() -> None:
    _, plan, _ = _solve(rich_docs.one_too_many((0, 5)))
    assert plan.unassigned == (TaskRef("job", 0),)
    _, plan, _ = _solve(rich_docs.one_too_many((5, 0)))
    assert plan.unassigned == (TaskRef("job", 1),)


def test_max_tasks_and_max_travel_time() -> None:
    _, plan, check = _solve(rich_docs.limits())
    assert plan.unassigned == (TaskRef("job", 6),)
    assert all(r.task_count <= 3 for r in plan.routes)
    assert all(r.duration <= 120 for r in check.routes)


def test_max_distance() -> None:
    doc = rich_docs.limits()
    for v in doc["vehicles"]:
        v.pop("max_travel_time")
        v["max_distance"] = 60
    doc["matrices"]["car"]["distances"] = rich_docs.line_matrix(8, step=5)
    _, plan, check = _solve(doc)
    assert len(plan.unassigned) == 1 and all(r.distance <= 60 for r in check.routes)


def test_cancel_and_time_limit_are_kept() -> None:
    problem = parse_document(small_document(jobs=30, vehicles=4, seed=2))
    cancel = threading.Event()
    cancel.set()
    t0 = time.perf_counter()
    vrp_ortools.solve(problem, Budget(time_limit=30.0, cancel=cancel), 0, None)
    assert time.perf_counter() - t0 < 2.0
    t0 = time.perf_counter()
    plan = vrp_ortools.solve(problem, Budget(time_limit=0.5), 0, None)
    assert time.perf_counter() - t0 < 0.7
    assert check_plan(problem, plan).feasible


def test_steps_are_a_starting_solution_and_pins_are_refused() -> None:
    doc = small_document(jobs=6, vehicles=2)
    doc["vehicles"][0]["steps"] = [{"type": "job", "id": 100 + k} for k in range(6)]
    _, plan, _ = _solve(doc)
    assert not plan.unassigned
    doc["vehicles"][0]["steps"][2]["pinned"] = True
    assert "vehicles[0].steps[2].pinned" in vrp_ortools.supports(parse_document(doc))


def test_large_models_read_the_matrix_through_a_callback(monkeypatch) -> None:
    monkeypatch.setattr(vrp_ortools, "DENSE_LIMIT", 3)
    _, plan, _ = _solve(rich_docs.skills_and_breaks())
    assert not plan.unassigned
