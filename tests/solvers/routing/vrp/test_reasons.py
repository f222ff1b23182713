"""A reason for every unassigned task, found by trying to insert it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from solvers.routing.vrp.check import check_plan, check_route
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.parse import parse_document
from solvers.routing.vrp.plan import RoutePlan, TaskRef, VrpPlan
from solvers.routing.vrp.reasons import REASON_TEXT, REASONS, unassigned_reasons
from solvers.routing.vrp.vroom import build_input, plan_from_output
from tests.solvers.routing.vrp.docs import rich_document

LINE = [[abs(a - b) * 10 for b in range(4)] for a in range(4)]
#: A triangle: the depot 0 is 10 s from 1 and from 2, which are 30 s apart.
TRIANGLE = [[0, 10, 10], [10, 0, 30], [10, 30, 0]]
J0, J1 = TaskRef("job", 0), TaskRef("job", 1)


def _reason(vehicle: dict[str, Any], job: dict[str, Any], routed: dict[str, Any] | None = None,
            matrix: list[list[int]] = LINE) -> str:
    """The reason given for ``job`` left out of a one-vehicle plan (that serves ``routed``)."""
    jobs = ([{"id": 1, **routed}] if routed else []) + [{"id": 2, **job}]
    doc = {"vehicles": [{"id": 1, "start_index": 0, "end_index": 0, "capacity": [5],
                         **vehicle}],
           "jobs": jobs,
           "matrices": {"car": {"durations": matrix,
                                "distances": [[x * 10 for x in r] for r in matrix]}}}
    problem = parse_document(doc)
    left = TaskRef("job", len(jobs) - 1)
    routes = (RoutePlan(0, (J0,)),) if routed else ()
    reasons = unassigned_reasons(problem, VrpPlan(routes, (left,)))
    assert set(reasons) == {left}
    return reasons[left]


@pytest.mark.parametrize(("vehicle", "job", "routed", "matrix", "reason"), [
    ({}, {"location_index": 1, "skills": [9]}, None, LINE, "skills"),
    ({"time_window": [0, 50]}, {"location_index": 3}, None, LINE, "unreachable"),
    ({"max_distance": 500}, {"location_index": 3}, None, LINE, "unreachable"),
    ({}, {"location_index": 1, "delivery": [6]}, None, LINE, "capacity"),
    ({}, {"location_index": 2, "pickup": [3]}, {"location_index": 1, "pickup": [3]}, LINE,
     "capacity"),
    ({}, {"location_index": 3, "time_windows": [[0, 20]]}, None, LINE, "time_window"),
    ({"time_window": [0, 70]}, {"location_index": 2, "service": 31}, {"location_index": 1},
     LINE, "time_window"),
    ({"breaks": [{"id": 1, "max_load": [0]}]}, {"location_index": 1, "delivery": [1],
                                                "pickup": [1]}, None, LINE, "break"),
    ({"max_tasks": 1}, {"location_index": 2}, {"location_index": 1}, LINE, "max_tasks"),
    ({"max_travel_time": 40}, {"location_index": 2}, {"location_index": 1}, TRIANGLE,
     "max_travel_time"),
    ({"max_distance": 400}, {"location_index": 2}, {"location_index": 1}, TRIANGLE,
     "max_distance"),
    ({}, {"location_index": 2}, {"location_index": 1}, LINE, "insertable"),
])
def test_each_reason(vehicle: dict[str, Any], job: dict[str, Any], routed: dict[str, Any] | None,
                     matrix: list[list[int]], reason: str) -> None:
    assert _reason(vehicle, job, routed, matrix) == reason


def test_an_unused_vehicle_is_tried_too() -> None:
    doc = {"vehicles": [{"id": 1, "start_index": 0, "capacity": [1]},
                        {"id": 2, "start_index": 0, "capacity": [9]}],
           "jobs": [{"id": 1, "location_index": 1, "delivery": [1]},
                    {"id": 2, "location_index": 2, "delivery": [5]}],
           "matrices": {"car": {"durations": LINE}}}
    problem = parse_document(doc)
    plan = VrpPlan((RoutePlan(0, (J0,)),), (J1,))
    assert unassigned_reasons(problem, plan) == {J1: "insertable"}


def test_a_shipment_gets_one_reason_for_both_halves() -> None:
    doc = {"vehicles": [{"id": 1, "start_index": 0, "capacity": [3]}],
           "shipments": [{"amount": [4], "pickup": {"id": 1, "location_index": 1},
                          "delivery": {"id": 1, "location_index": 2}}],
           "matrices": {"car": {"durations": LINE}}}
    problem = parse_document(doc)
    halves = (TaskRef("pickup", 0), TaskRef("delivery", 0))
    assert unassigned_reasons(problem, VrpPlan((), halves)) == dict.fromkeys(halves, "capacity")


def test_every_reason_is_explained() -> None:
    assert set(REASON_TEXT) == set(REASONS)


def _brute_force_insertable(problem: VrpProblem, plan: VrpPlan, task: list[TaskRef]) -> bool:
    """Whether the task fits anywhere, by the full check of every position (no shortcut)."""
    routes = {r.vehicle_index: list(r.steps) for r in plan.routes}
    for v, vehicle in enumerate(problem.vehicles):
        base = routes.get(v, [TaskRef("break", b) for b in range(len(vehicle.breaks))])
        n = len(base)
        tries = ([base[:i] + task + base[i:] for i in range(n + 1)] if len(task) == 1 else
                 [[*base[:i], task[0], *base[i:j], task[1], *base[j:]]
                  for i in range(n + 1) for j in range(i, n + 1)])
        if any(check_route(problem, v, steps, late_start=False).feasible for steps in tries):
            return True
    return False


@pytest.mark.parametrize("seed", range(8))
def test_the_quick_conditions_never_hide_a_feasible_insertion(seed: int) -> None:
    """Tasks dropped from VROOM's plan of tight documents: "insertable" exactly when some
    position passes the full check."""
    rng = random.Random(seed)
    doc = rich_document(seed)
    for job in doc["jobs"]:
        start = job["time_windows"][0][0]
        job["time_windows"] = [[start, start + rng.randint(20, 120)]]
    for vehicle in doc["vehicles"]:
        vehicle["capacity"] = [rng.randint(5, 9)]
    problem = parse_document(doc)
    output = build_input(problem).solve(exploration_level=1, nb_threads=1).to_dict()
    plan = plan_from_output(problem, output)
    dropped = {s for r in plan.routes for s in r.steps if s.kind == "job" and rng.random() < 0.4}
    plan = VrpPlan(tuple(RoutePlan(r.vehicle_index, tuple(s for s in r.steps if s not in dropped))
                         for r in plan.routes), (*plan.unassigned, *sorted(dropped)))
    assert check_plan(problem, plan).feasible
    for ref, code in unassigned_reasons(problem, plan).items():
        if ref.kind != "delivery":
            task = [ref] if ref.kind == "job" else [ref, TaskRef("delivery", ref.index)]
            assert (code == "insertable") == _brute_force_insertable(problem, plan, task)
