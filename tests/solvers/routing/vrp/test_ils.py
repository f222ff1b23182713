"""The ils VRP solver: which documents it takes, and a checked plan on one it does."""

from __future__ import annotations

import random

import pytest

from solvers.contract import Budget
from solvers.routing.vrp import ils
from solvers.routing.vrp.check import check_plan
from solvers.routing.vrp.parse import parse_document
from tests.solvers.routing.vrp.docs import small_document


def _coordinate_document(jobs: int = 12, vehicles: int = 3, capacity: int = 15) -> dict:
    rng = random.Random(1)
    return {"vehicles": [{"id": v, "start": [2500.0, 2500.0], "end": [2500.0, 2500.0],
                          "capacity": [capacity]} for v in range(1, vehicles + 1)],
            "jobs": [{"id": k, "location": [rng.uniform(0, 5000), rng.uniform(0, 5000)],
                      "delivery": [rng.randint(1, 4)], "service": 30}
                     for k in range(1, jobs + 1)]}


def test_takes_coordinates_and_matrices_that_match_them() -> None:
    doc = _coordinate_document()
    assert ils.supports(parse_document(doc)) is None
    problem = parse_document(doc)
    xy = [problem.locations[j.location_index] for j in problem.jobs]
    depot = problem.locations[problem.vehicles[0].start_index]
    places = [depot, *xy]
    exact = [[round(3 * ((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) ** 0.5) for b in places]
             for a in places]
    with_matrix = {"vehicles": [{"id": 1, "start_index": 0, "end_index": 0,
                                 "capacity": [15], "start": list(depot), "end": list(depot)}],
                   "jobs": [{"id": k + 1, "location_index": k + 1, "location": list(p),
                             "delivery": [1]} for k, p in enumerate(xy)],
                   "matrices": {"car": {"durations": exact}}}
    assert ils.supports(parse_document(with_matrix)) is None
    exact[1][2] *= 2  # no longer Euclidean
    assert "proportional" in ils.supports(parse_document(with_matrix))


def test_refuses_what_its_moves_do_not_fit() -> None:
    assert "coordinates" in ils.supports(parse_document(small_document(windows=False)))
    doc = _coordinate_document()
    doc["jobs"][0]["pickup"] = [1]
    assert "not both" in ils.supports(parse_document(doc))
    for feature in ("time_windows", "shipments", "multi_depot", "heterogeneous"):
        assert feature not in ils.FEATURES


def test_routes_every_job_and_leaves_out_what_the_fleet_cannot_carry() -> None:
    problem = parse_document(_coordinate_document())
    plan = ils.solve(problem, Budget(time_limit=1.0), 0, None)
    check = check_plan(problem, plan)
    assert check.feasible, check.violations
    assert not plan.unassigned and len(plan.routes) <= 3
    small = parse_document(_coordinate_document(vehicles=1, capacity=10))
    plan = ils.solve(small, Budget(time_limit=0.5), 0, None)
    assert check_plan(small, plan).feasible
    assert len(plan.routes) == 1 and plan.unassigned
    carried = sum(small.jobs[s.index].delivery[0] for s in plan.routes[0].steps)
    assert carried <= 10


def test_registered_and_refused_by_feature() -> None:
    from solvers.errors import ProblemMismatchError
    from solvers.routing.vrp.solve import solve_vrp

    with pytest.raises(ProblemMismatchError, match="time_windows"):
        solve_vrp(parse_document(small_document()), "ils", Budget(time_limit=1.0))
