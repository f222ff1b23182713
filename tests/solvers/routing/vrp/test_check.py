"""The VRP checker on hand-computed routes: schedules, loads, costs and every rule."""

from __future__ import annotations

from typing import Any

from solvers.routing.vrp.check import check_plan, check_route
from solvers.routing.vrp.parse import parse_document
from solvers.routing.vrp.plan import RoutePlan, TaskRef, VrpPlan

#: Four places on a line, 10 s apart: 0 -- 1 -- 2 -- 3.
LINE = [[abs(a - b) * 10 for b in range(4)] for a in range(4)]


def _doc(jobs: list[dict[str, Any]], vehicle: dict[str, Any] | None = None,
         **extra: Any) -> dict[str, Any]:
    doc = {"vehicles": [{"id": 1, "start_index": 0, "end_index": 0, "capacity": [5],
                         **(vehicle or {})}],
           "jobs": jobs,
           "matrices": {"car": {"durations": LINE,
                                "distances": [[x * 100 for x in r] for r in LINE]}}}
    doc.update(extra)
    return doc


def _job(k: int, place: int, **extra: Any) -> dict[str, Any]:
    return {"id": k, "location_index": place, **extra}


def _codes(doc: dict[str, Any], steps: list[TaskRef]) -> list[str]:
    problem = parse_document(doc)
    return [v.code for v in check_route(problem, 0, steps).violations]


J0, J1, J2 = TaskRef("job", 0), TaskRef("job", 1), TaskRef("job", 2)


def test_a_plain_route_schedule_and_cost() -> None:
    problem = parse_document(_doc([_job(7, 1, service=5, delivery=[2]),
                                   _job(8, 3, service=5, pickup=[1])]))
    check = check_plan(problem, VrpPlan((RoutePlan(0, (J0, J1)),)))
    assert check.feasible, check.violations
    route = check.routes[0]
    times = [(s.type, s.arrival, s.duration, s.load) for s in route.steps]
    assert times == [("start", 0, 0, (2,)), ("job", 10, 10, (0,)), ("job", 35, 30, (1,)),
                     ("end", 70, 60, (1,))]
    assert route.duration == 60 and route.distance == 6000 and route.cost == 60
    assert route.service == 10 and route.delivery == (2,) and route.pickup == (1,)
    assert check.cost == 60 and check.unassigned == 0


def test_setup_only_on_arriving_from_elsewhere() -> None:
    doc = _doc([_job(1, 1, setup=4, service=1), _job(2, 1, setup=4, service=1),
                _job(3, 0, setup=4, service=1)])
    route = check_plan(parse_document(doc), VrpPlan((RoutePlan(0, (J0, J1, J2)),))).routes[0]
    assert [s.setup for s in route.steps] == [0, 4, 0, 4, 0]
    assert route.setup == 8 and route.steps[-1].arrival == 10 + 5 + 1 + 10 + 5


def test_waiting_is_spent_at_the_depot_when_the_route_can_leave_later() -> None:
    doc = _doc([_job(1, 1, time_windows=[[100, 120]]), _job(2, 2, time_windows=[[300, 400]])])
    route = check_plan(parse_document(doc), VrpPlan((RoutePlan(0, (J0, J1)),))).routes[0]
    # leaves at 110 to start job 1 at the end of its window; then waits 170 at job 2
    assert [(s.arrival, s.waiting) for s in route.steps] == [(110, 0), (120, 0), (130, 170),
                                                            (320, 0)]
    assert route.waiting_time == 170


def test_time_windows_capacity_and_vehicle_shift() -> None:
    assert _codes(_doc([_job(1, 3, time_windows=[[0, 20]])]), [J0]) == ["time_window"]
    assert _codes(_doc([_job(1, 3)], {"time_window": [0, 50]}), [J0]) == ["time_window"]
    assert _codes(_doc([_job(1, 3, time_windows=[[0, 5], [30, 40]])]), [J0]) == []
    two = [_job(1, 1, delivery=[3]), _job(2, 2, delivery=[3])]
    assert _codes(_doc(two), [J0, J1]) == ["capacity"]  # 6 loaded at the start
    picks = [_job(1, 1, pickup=[3]), _job(2, 2, pickup=[3]), _job(3, 3, delivery=[2])]
    assert _codes(_doc(picks), [J2, J0, J1]) == ["capacity"]  # 6 after the second pickup
    assert _codes(_doc(picks), [J0, J1, J2]) == ["capacity"] * 2  # 2 + 3 + 3, then 6
    assert _codes(_doc(picks), [J2, J0]) == []  # 2 on board, unloaded, then 3 picked up


def test_skills_limits_and_speed_factor() -> None:
    assert _codes(_doc([_job(1, 1, skills=[4])], {"skills": [1]}), [J0]) == ["skills"]
    assert _codes(_doc([_job(1, 1, skills=[4])], {"skills": [1, 4]}), [J0]) == []
    jobs = [_job(1, 1), _job(2, 2)]
    assert _codes(_doc(jobs, {"max_tasks": 1}), [J0, J1]) == ["max_tasks"]
    assert _codes(_doc(jobs, {"max_travel_time": 39}), [J0, J1]) == ["max_travel_time"]
    assert _codes(_doc(jobs, {"max_travel_time": 40}), [J0, J1]) == []
    assert _codes(_doc(jobs, {"max_distance": 3999}), [J0, J1]) == ["max_distance"]
    assert _codes(_doc(jobs, {"max_distance": 4000}), [J0, J1]) == []
    fast = parse_document(_doc(jobs, {"speed_factor": 2.0, "max_travel_time": 20}))
    route = check_route(fast, 0, [J0, J1])
    assert route.feasible and route.duration == 20 and route.steps[1].arrival == 5


def test_costs_fixed_per_hour_per_km_and_a_cost_matrix() -> None:
    jobs = [_job(1, 3)]
    priced = parse_document(_doc(jobs, {"costs": {"fixed": 7, "per_hour": 1800, "per_km": 10}}))
    # 60 s at 1800/h = 30, 6 km at 10/km = 60, plus 7 fixed
    assert check_route(priced, 0, [J0]).cost == 97
    doc = _doc(jobs)
    doc["matrices"]["car"]["costs"] = [[3] * 4 for _ in range(4)]
    assert check_route(parse_document(doc), 0, [J0]).cost == 6
    empty = check_plan(priced, VrpPlan((), (J0,)))
    assert empty.cost == 0 and empty.routes == () and empty.feasible


def test_shipments_pickup_before_delivery_on_one_vehicle() -> None:
    doc = _doc([], shipments=[{"amount": [4], "pickup": {"id": 1, "location_index": 1},
                               "delivery": {"id": 1, "location_index": 2}}])
    doc["vehicles"].append({"id": 2, "start_index": 0, "capacity": [5]})
    problem = parse_document(doc)
    p, d = TaskRef("pickup", 0), TaskRef("delivery", 0)
    ok = check_plan(problem, VrpPlan((RoutePlan(0, (p, d)),)))
    assert ok.feasible and [s.load for s in ok.routes[0].steps] == [(0,), (4,), (0,), (0,)]
    backwards = check_plan(problem, VrpPlan((RoutePlan(0, (d, p)),)))
    assert "precedence" in backwards.codes
    split = check_plan(problem, VrpPlan((RoutePlan(0, (p,)), RoutePlan(1, (d,)))))
    assert split.codes.count("precedence") == 2


def test_breaks_use_travel_time_and_waiting_and_must_all_be_taken() -> None:
    brk = {"id": 9, "service": 15, "time_windows": [[25, 30]]}
    doc = _doc([_job(1, 1, service=5), _job(2, 3, service=5)], {"breaks": [brk]})
    b = TaskRef("break", 0)
    route = check_route(parse_document(doc), 0, [J0, b, J1])
    assert route.feasible
    # job 1 ends at 15; 10 s of the 20 s drive happen before the break at 25
    steps = {s.type: s for s in route.steps}
    assert steps["break"].arrival == 25 and steps["break"].waiting == 0
    assert steps["job"].arrival == 25 + 15 + 10 and route.steps[-1].arrival == 85
    assert _codes(doc, [J0, J1]) == ["break"]  # missing
    assert _codes(doc, [J0, J1, b]) == ["break"]  # too late: after its window
    loaded = _doc([_job(1, 1, pickup=[3])], {"breaks": [{"id": 9, "max_load": [2]}]})
    assert _codes(loaded, [J0, b]) == ["break"]
    assert _codes(loaded, [b, J0]) == []


def test_plan_structure_every_task_once() -> None:
    problem = parse_document(_doc([_job(1, 1), _job(2, 2)]))
    twice = check_plan(problem, VrpPlan((RoutePlan(0, (J0, J0)),), (J1,)))
    assert not twice.feasible and any("again" in v for v in twice.violations)
    missing = check_plan(problem, VrpPlan((RoutePlan(0, (J0,)),)))
    assert any("neither" in v for v in missing.violations)
    both = check_plan(problem, VrpPlan((RoutePlan(0, (J0, J1)),), (J1,)))
    assert any("unassigned" in v for v in both.violations)
    unknown = check_plan(problem, VrpPlan((RoutePlan(5, (J0,)), RoutePlan(0, (TaskRef("job", 9),
                                                                            J1)))))
    assert unknown.codes.count("plan") >= 3
    assert check_plan(problem, VrpPlan((), (J0, J1))).feasible
