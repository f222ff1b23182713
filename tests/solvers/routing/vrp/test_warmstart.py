"""Warm starts: the starting plan kept, pinned steps in place, new tasks inserted with the
least change, and the list of what moved."""

from __future__ import annotations

import pytest

from solvers.contract import Budget
from solvers.errors import NoSolutionError
from solvers.routing.vrp import warmstart
from solvers.routing.vrp.check import check_plan
from solvers.routing.vrp.parse import parse_document
from solvers.routing.vrp.plan import TaskRef, moved_tasks
from tests.solvers.routing.vrp import rich_docs
from tests.solvers.routing.vrp.docs import small_document

BUDGET = Budget(time_limit=5.0)


def _running(doc: dict, steps: dict[int, list[tuple[str, int, bool]]]) -> dict:
    for v in doc["vehicles"]:
        v["steps"] = [{"type": t, "id": i, "pinned": p} for t, i, p in steps.get(v["id"], [])]
    return doc


def _solve(doc: dict):
    problem = parse_document(doc)
    plan = warmstart.solve(problem, BUDGET, 0, None)
    check = check_plan(problem, plan)
    assert check.feasible, check.violations
    return problem, plan


def test_new_jobs_are_inserted_and_the_plan_kept() -> None:
    doc = _running(small_document(jobs=6, vehicles=2, windows=False),
                   {1: [("job", 100, True), ("job", 101, False)],
                    2: [("job", 102, False), ("job", 103, True)]})
    problem, plan = _solve(doc)
    assert not plan.unassigned
    by_vehicle = {r.vehicle_index: r.steps for r in plan.routes}
    kept0 = [s for s in by_vehicle[0] if s in (TaskRef("job", 0), TaskRef("job", 1))]
    kept1 = [s for s in by_vehicle[1] if s in (TaskRef("job", 2), TaskRef("job", 3))]
    assert kept0 == [TaskRef("job", 0), TaskRef("job", 1)]
    assert kept1 == [TaskRef("job", 2), TaskRef("job", 3)]
    assert moved_tasks(problem, plan) == []  # only new jobs were added


def test_cheapest_insertion_position() -> None:
    # places on a line: the new job at 2 goes between 1 and 3, not after 3
    doc = {"vehicles": [{"id": 1, "start_index": 0, "end_index": 0,
                         "steps": [{"type": "job", "id": 1}, {"type": "job", "id": 3}]}],
           "jobs": [{"id": k, "location_index": k} for k in (1, 2, 3)],
           "matrices": {"car": {"durations": rich_docs.line_matrix(4)}}}
    _, plan = _solve(doc)
    assert plan.routes[0].steps == (TaskRef("job", 0), TaskRef("job", 1), TaskRef("job", 2))


def test_an_infeasible_start_gives_up_unpinned_tasks_only() -> None:
    # capacity 3 holds one job; the pinned one stays, the other goes to the second vehicle
    doc = rich_docs.one_too_many()
    doc["vehicles"].append({"id": 2, "start_index": 0, "end_index": 0, "capacity": [3]})
    doc = _running(doc, {1: [("job", 1, False), ("job", 2, True)]})
    problem, plan = _solve(doc)
    routes = {r.vehicle_index: r.steps for r in plan.routes}
    assert routes == {0: (TaskRef("job", 1),), 1: (TaskRef("job", 0),)}
    assert moved_tasks(problem, plan) == [
        {"type": "job", "id": 1, "from_vehicle": 1, "to_vehicle": 2}]


def test_pinned_steps_that_break_the_rules_are_an_error() -> None:
    doc = _running(rich_docs.one_too_many(), {1: [("job", 1, True), ("job", 2, True)]})
    with pytest.raises(NoSolutionError, match="vehicle 1: its pinned steps"):
        warmstart.solve(parse_document(doc), BUDGET, 0, None)


def test_shipments_and_breaks_are_inserted() -> None:
    doc = small_document(jobs=2, vehicles=1, shipments=2, windows=False)
    doc["vehicles"][0]["breaks"] = [{"id": 9, "time_windows": [[50, 400]], "service": 10}]
    doc = _running(doc, {1: [("job", 100, True)]})
    _, plan = _solve(doc)
    assert not plan.unassigned
    steps = plan.routes[0].steps
    assert TaskRef("break", 0) in steps
    assert steps.index(TaskRef("pickup", 1)) < steps.index(TaskRef("delivery", 1))



@pytest.mark.parametrize("solver", ["pyvrp", "ortools", "warmstart"])
def test_registered_and_checked_through_solve_vrp(solver: str) -> None:
    from solvers.routing.vrp.solve import solve_vrp

    doc = _running(small_document(jobs=5, vehicles=2), {1: [("job", 100, False)]})
    result = solve_vrp(parse_document(doc), solver, Budget(time_limit=2.0, max_solutions=50))
    assert result.check.feasible and not result.plan.unassigned
    assert result.output["cosolve"]["solver"] == solver


def test_a_document_without_steps_is_for_the_other_solvers() -> None:
    assert "vehicles[].steps" in warmstart.supports(parse_document(small_document()))
