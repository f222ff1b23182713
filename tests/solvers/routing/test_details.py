"""Route details (load, distance, duration, stop times), summaries and units, against figures
worked out by hand here, not by the module under test."""

from __future__ import annotations

import math

import pytest

from solvers.routing.details import solution_details
from solvers.routing.io.documents import solution_to_dict
from solvers.routing.io.formats import load_instance
from solvers.routing.io.solutions import tour_from_text, vrp_tour_routes
from solvers.routing.problem import CVRPInstance, CVRPTWInstance, TSPInstance
from solvers.routing.solution import build_solution
from tests.conftest import DATA


@pytest.fixture
def five() -> CVRPTWInstance:
    """Depot (0,0); 1 (10,0) [0,15] serving 5; 2 (0,10) [0,50] serving 5; 3 (20,0) [28,40]
    serving 2; 4 (10,10) [40,60] serving 3; EUC_2D, so 3 -> 4 and 4 -> 0 are round(14.14) = 14.
    Route [1, 3, 4]: arrive 1 at 10, leave 15; arrive 3 at 25, wait 3, start 28, leave 30;
    arrive 4 at 44, leave 47; back at 61: distance 48, service 10, waiting 3, duration 61.
    Route [2]: arrive 10, leave 15, back 25: distance 20, duration 25."""
    return CVRPTWInstance(
        name="five", coords=[[0, 0], [10, 0], [0, 10], [20, 0], [10, 10]], distance="EUC_2D",
        demands=[0, 3, 3, 3, 2], capacity=9, node_ids=[100, 101, 102, 103, 104],
        time_windows=[[0, 100], [0, 15], [0, 50], [28, 40], [40, 60]],
        service_times=[0, 5, 5, 2, 3])


def test_a_cvrptw_plan_with_waiting_worked_by_hand(five):
    details = solution_details(five, [[1, 3, 4], [2]])
    assert details is not None
    first, second = details["route_details"]
    assert first["schedule"] == [
        {"node": 1, "id": 101, "arrival": 10, "waiting": 0, "start": 10, "departure": 15},
        {"node": 3, "id": 103, "arrival": 25, "waiting": 3, "start": 28, "departure": 30},
        {"node": 4, "id": 104, "arrival": 44, "waiting": 0, "start": 44, "departure": 47},
    ]
    assert (first["stops"], first["load"], first["capacity"]) == (3, 8, 9)
    assert (first["distance"], first["service"], first["waiting"]) == (48, 10, 3)
    assert (first["start"], first["end"], first["duration"]) == (0, 61, 61)
    assert (second["distance"], second["duration"], second["waiting"]) == (20, 25, 0)
    assert details["summary"] == {
        "routes": 2, "vehicles_used": 2, "total_load": 11, "total_distance": 68,
        "total_duration": 86, "total_service": 15, "total_waiting": 3, "latest_return": 61}
    assert details["summary"]["total_distance"] == five.cost([[1, 3, 4], [2]])


def test_a_late_plan_shows_the_late_start_the_checker_names(five):
    # 4 before 1: arrive 4 at 14, wait to 40, leave 43; arrive 1 at 53 > its latest 15
    solution = build_solution(five, [[4, 1], [2, 3]], solver="hand", wall_time=0)
    assert not solution.feasible
    assert any("late at node 1: arrives 53" in v for v in solution.violations)
    stops = solution_details(five, solution.routes)["route_details"][0]["schedule"]
    assert [(s["arrival"], s["waiting"], s["start"]) for s in stops] == [(14, 26, 40),
                                                                         (53, 0, 53)]


def test_a_cvrp_with_an_empty_route():
    square = CVRPInstance(coords=[[0, 0], [3, 4], [6, 8], [0, 5]], demands=[0, 2, 3, 4],
                          capacity=6)
    details = solution_details(square, [[1, 2], [], [3]])
    routes = details["route_details"]
    # 0 -> (3,4) -> (6,8) -> 0: 5 + 5 + 10; 0 -> (0,5) -> 0: 10
    assert [(r["stops"], r["load"], r["distance"], r["duration"]) for r in routes] == [
        (2, 5, 20.0, 20.0), (0, 0, 0.0, 0.0), (1, 4, 10.0, 10.0)]
    assert routes[0]["schedule"] is None and routes[0]["waiting"] is None
    summary = details["summary"]
    assert (summary["routes"], summary["vehicles_used"], summary["total_load"]) == (3, 2, 9)
    assert summary["total_distance"] == 30.0 and summary["total_waiting"] is None
    assert "coordinates' units" in details["units"]["distance"]
    assert details["units"]["scale"] == 1


def test_a_tsp_and_a_matrix():
    tsp = TSPInstance(coords=[[0, 0], [0, 1], [1, 1], [1, 0]])
    details = solution_details(tsp, [[0, 1, 2, 3]])
    assert details["route_details"][0]["distance"] == 4.0
    assert details["route_details"][0]["load"] is None
    assert details["summary"]["total_load"] is None
    matrix = TSPInstance(distance_matrix=[[0, 2, 9], [2, 0, 4], [9, 4, 0]])
    details = solution_details(matrix, [[0, 1, 2]])
    assert details["summary"]["total_duration"] == 15.0
    assert details["units"]["distance"] == "the distance matrix's units"
    # a plan that cannot be read against the instance has none; its violations say why
    assert solution_details(tsp, [[0, 1], [2, 3]]) is None
    assert solution_details(tsp, [[0, 1, 2, 7]]) is None


def test_a_solomon_file_says_its_scale_and_totals_match_lkh3s_tour():
    inst = load_instance(DATA / "solomon" / "C101.100.10.vrptw")
    tour = tour_from_text((DATA / "solomon" / "C101.100.10.8273.tour").read_text())
    routes = vrp_tour_routes(tour, inst.n, inst.depot)
    details = solution_details(inst, routes)
    summary = details["summary"]
    assert summary["total_distance"] == 8273
    # each route's duration is its travel, service and waiting; service is 90 × SCALE each
    assert summary["total_service"] == 100 * 900
    assert math.isclose(summary["total_duration"], 8273 + 90_000 + summary["total_waiting"])
    assert details["units"]["scale"] == 10
    assert "SCALE 10" in details["units"]["distance"]
    for route in details["route_details"]:
        for stop in route["schedule"]:
            early, late = inst.time_windows[stop["node"]]
            assert early <= stop["start"] <= late
            assert stop["start"] - stop["arrival"] == stop["waiting"] >= 0


def test_the_solution_document_carries_them(five):
    solution = build_solution(five, [[1, 3, 4], [2]], solver="hand", wall_time=0)
    body = solution_to_dict(solution, five)
    assert body["summary"]["total_waiting"] == 3
    assert body["route_details"][1]["schedule"][0]["id"] == 102
    assert "route_details" not in solution_to_dict(solution)  # no instance, nothing to read
