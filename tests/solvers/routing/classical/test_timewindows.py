"""CVRPTW domain: Solomon files and LKH-3 reference tours, the time-window checker, validation
naming the field at fault, FLOOR_2D, JSON and .sol round trips."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from solvers.errors import InstanceError
from solvers.routing.check import check_solution
from solvers.routing.io.documents import instance_from_dict, instance_to_dict
from solvers.routing.io.formats import load_instance, parse_instance_bytes
from solvers.routing.io.solutions import read_sol, read_tour_routes, write_solution_file
from solvers.routing.problem import CVRPTWInstance, coordinate_distance
from solvers.routing.solution import build_solution
from tests.conftest import DATA

SOLOMON = DATA / "solomon"
#: LKH-3's best tours for the Solomon 100-customer instances: cost in SCALE units (tenths).
SOLOMON_TOURS = sorted(SOLOMON.glob("*.tour"))


def _instance_file(tour: Path) -> Path:
    """``C101.100.10.8273.tour`` -> ``C101.100.10.vrptw``."""
    return tour.with_name(".".join(tour.name.split(".")[:3]) + ".vrptw")


def _stated_cost(tour: Path) -> int:
    return int(tour.name.split(".")[3])


def test_all_six_solomon_tours_are_bundled():
    assert [t.name.split(".")[0] for t in SOLOMON_TOURS] == [
        "C101", "C201", "R101", "R201", "RC101", "RC201"]


@pytest.mark.parametrize("tour", SOLOMON_TOURS, ids=lambda p: p.name.split(".")[0])
def test_solomon_reference_tours_recompute_to_their_stated_cost(tour):
    inst = load_instance(_instance_file(tour))
    assert isinstance(inst, CVRPTWInstance)
    assert (inst.problem, inst.n, inst.distance, inst.scale) == ("cvrptw", 101, "FLOOR_2D", 10)
    routes = read_tour_routes(tour, inst.n, inst.depot)
    assert sorted(v for r in routes for v in r) == list(range(1, 101))
    assert len(routes) == inst.max_vehicles
    sol = build_solution(inst, routes, solver="LKH-3", wall_time=0.0)
    assert sol.feasible, sol.violations
    assert sol.cost == _stated_cost(tour)
    assert sol.distance == "FLOOR_2D"
    # Driven backwards the same routes keep their length but break windows: the checker
    # really simulates the schedule.
    backwards = check_solution(inst, [r[::-1] for r in routes])
    assert any("late at node" in v for v in backwards), backwards


def test_solomon_file_reads_scaled_times_and_service():
    inst = load_instance(SOLOMON / "C101.100.10.vrptw")
    assert isinstance(inst, CVRPTWInstance)
    # SCALE 10 applies to coordinates, windows and service times alike (LKH-3's reading).
    assert inst.coords[0].tolist() == [400.0, 500.0]
    assert inst.time_windows[0].tolist() == [0.0, 12360.0]
    assert inst.time_windows[1].tolist() == [9120.0, 9670.0]
    assert inst.service_times[0] == 0 and inst.service_times[1] == 900
    assert (inst.capacity, inst.max_vehicles, inst.integral_times) == (200, 10, True)
    assert inst.describe()["horizon"] == [0.0, 12360.0]


def test_floor_2d_rounds_down_and_matters_for_the_reference_cost():
    a, b = np.array([[0.0, 0.0]]), np.array([[3.0, 3.0]])  # 4.2426...
    assert coordinate_distance(a, b, "FLOOR_2D")[0] == 4.0
    assert coordinate_distance(a, b, "EUC_2D")[0] == 4.0
    assert coordinate_distance(a, np.array([[4.0, 4.0]]), "FLOOR_2D")[0] == 5.0  # 5.657
    assert coordinate_distance(a, np.array([[4.0, 4.0]]), "EUC_2D")[0] == 6.0
    tour = SOLOMON_TOURS[0]
    inst = load_instance(_instance_file(tour))
    routes = read_tour_routes(tour, inst.n, inst.depot)
    rounded = CVRPTWInstance(**{**_kwargs(inst), "distance": "EUC_2D"})
    assert rounded.cost(routes) != _stated_cost(tour)


def _kwargs(inst: CVRPTWInstance) -> dict:
    return dict(coords=inst.coords, distance=inst.distance, demands=inst.demands,
                capacity=inst.capacity, max_vehicles=inst.max_vehicles,
                time_windows=inst.time_windows, service_times=inst.service_times)


# -- the checker on a small instance whose schedules are worked out by hand ----------------
@pytest.fixture()
def tiny() -> CVRPTWInstance:
    """Depot (0,0) open [0, 50]; 1 at (10,0) [0, 15] serving 5; 2 at (0,10) [0, 50] serving 5;
    3 at (20,0) [28, 30]; EUC_2D; capacity 9, at most 2 vehicles."""
    return CVRPTWInstance(
        coords=[[0, 0], [10, 0], [0, 10], [20, 0]], distance="EUC_2D",
        demands=[0, 3, 3, 3], capacity=9, max_vehicles=2,
        time_windows=[[0, 50], [0, 15], [0, 50], [28, 30]], service_times=[0, 5, 5, 0],
    )


def test_waiting_for_a_window_is_allowed(tiny):
    # Route 0 reaches 3 at 25, waits until 28, and is back at 48 <= 50.
    sol = build_solution(tiny, [[1, 3], [2]], solver="t", wall_time=0)
    assert sol.feasible, sol.violations
    assert sol.cost == 60


def test_late_arrival_names_route_and_node(tiny):
    violations = check_solution(tiny, [[2], [3, 1]])
    # 0 -> 3 at 20, waits to 28, -> 1 at 38 > 15, leaves at 43 and is back at 53 > 50.
    assert violations == ["route 1: late at node 1: arrives 38 > latest 15 (by 23)",
                          "route 1: late at the depot (0): returns 53 > latest 50 (by 3)"]
    assert not build_solution(tiny, [[2], [3, 1]], solver="t", wall_time=0).feasible


def test_late_return_to_the_depot_is_caught(tiny):
    # 1 at 10 (leaves 15), 3 at 25 (waits to 28), 2 at 28 + 22 = 50 (leaves 55), back at 65.
    violations = check_solution(tiny, [[1, 3, 2]])
    assert violations == ["route 0: late at the depot (0): returns 65 > latest 50 (by 15)"]


@pytest.mark.parametrize(
    ("routes", "words"),
    [
        ([[1, 3]], "never visited"),
        ([[1, 3], [2, 1]], "more than once"),
        ([[1], [2], [3]], "max_vehicles"),
        ([[0, 1, 3], [2]], "depot"),
        ([[1, 3], [2, 7]], "out of range"),
    ],
)
def test_cvrp_rules_still_hold_with_time_windows(tiny, routes, words):
    violations = check_solution(tiny, routes)
    assert violations and any(words in v for v in violations), violations


def test_capacity_is_checked_with_time_windows():
    inst = CVRPTWInstance(coords=[[0, 0], [1, 0], [0, 1]], demands=[0, 4, 4], capacity=6,
                          time_windows=[[0, 100], [0, 100], [0, 100]])
    assert any("capacity" in v for v in check_solution(inst, [[1, 2]]))
    assert check_solution(inst, [[1], [2]]) == []


def test_float_times_use_a_tolerance_not_a_free_pass():
    # exact distances: 0 -> 1 is sqrt(2); a window closing exactly then is met, earlier is not.
    kwargs = dict(coords=[[0, 0], [1, 1]], demands=[0, 1], capacity=1)
    ok = CVRPTWInstance(time_windows=[[0, 10], [0, 2 ** 0.5]], **kwargs)
    assert check_solution(ok, [[1]]) == []
    with pytest.raises(InstanceError) as err:
        CVRPTWInstance(time_windows=[[0, 10], [0, 1.414]], **kwargs)
    assert err.value.field == "time_windows[1]"


# -- validation ------------------------------------------------------------------------------
def _tw(**overrides):
    base = dict(coords=[[0, 0], [3, 4], [6, 8]], distance="EUC_2D", demands=[0, 1, 1],
                capacity=5, time_windows=[[0, 100], [0, 50], [10, 60]], service_times=[0, 2, 2])
    base.update(overrides)
    return CVRPTWInstance(**base)


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"time_windows": [[0, 100], [60, 50], [10, 60]]}, "time_windows[1]", "after latest"),
        ({"time_windows": [[0, 100], [-1, 50], [10, 60]]}, "time_windows[1]", "negative"),
        ({"time_windows": [[0, 100], [0, 50]]}, "time_windows", "one [earliest, latest]"),
        ({"time_windows": [[0, 100], [0, float("nan")], [10, 60]]}, "time_windows[1]",
         "finite"),
        ({"time_windows": [[0, 100], [0, 50], [0, 9]]}, "time_windows[2]", "unreachable"),
        ({"time_windows": [[0, 21], [0, 20], [10, 20]]}, "time_windows[2]", "depot's latest"),
        ({"service_times": [0, -1, 2]}, "service_times[1]", "negative"),
        ({"service_times": [1, 2, 2]}, "service_times[0]", "depot"),
        ({"service_times": [0, 2]}, "service_times", "one service time per node"),
        ({"time_windows": "soon"}, "time_windows", "pairs"),
    ],
)
def test_bad_windows_name_the_field(overrides, field, words):
    with pytest.raises(InstanceError) as err:
        _tw(**overrides)
    assert err.value.field == field, err.value
    assert words in err.value.message, err.value.message


def test_one_service_time_for_every_customer():
    inst = _tw(service_times=7)
    assert inst.service_times.tolist() == [0, 7, 7]


# -- files and JSON ------------------------------------------------------------------------
def test_json_round_trip_keeps_windows_and_costs(tiny):
    text = json.dumps(instance_to_dict(tiny))
    back = instance_from_dict(json.loads(text))
    assert isinstance(back, CVRPTWInstance)
    assert back.time_windows.tolist() == tiny.time_windows.tolist()
    assert back.service_times.tolist() == tiny.service_times.tolist()
    assert (back.capacity, back.max_vehicles, back.distance) == (9, 2, "EUC_2D")
    routes = [[1, 3], [2]]
    assert back.cost(routes) == tiny.cost(routes)
    assert check_solution(back, [[3, 1], [2]]) == check_solution(tiny, [[3, 1], [2]])
    as_file = parse_instance_bytes(text.encode(), "tiny.json")
    assert isinstance(as_file, CVRPTWInstance)


def test_json_needs_time_windows():
    with pytest.raises(InstanceError) as err:
        instance_from_dict({"problem": "cvrptw", "coords": [[0, 0], [1, 1]], "demands": [0, 1],
                            "capacity": 1})
    assert err.value.field == "time_windows"
    with pytest.raises(InstanceError) as err:
        instance_from_dict({"problem": "cvrp", "coords": [[0, 0], [1, 1]], "demands": [0, 1],
                            "capacity": 1, "time_windows": [[0, 9], [0, 9]]})
    assert err.value.field == "time_windows"  # unknown for a plain CVRP


def test_sol_round_trip(tiny, tmp_path):
    sol = build_solution(tiny, [[1, 3], [2]], solver="t", wall_time=0)
    write_solution_file(tmp_path / "tiny.sol", sol, tiny)
    routes, cost = read_sol(tmp_path / "tiny.sol")
    assert routes == [[1, 3], [2]] and cost == 60


VRPLIB_TW = """NAME : tiny
TYPE : VRPTW
DIMENSION : 3
CAPACITY : 5
EDGE_WEIGHT_TYPE : EUC_2D
NODE_COORD_SECTION
1 0 0
2 3 4
3 6 8
DEMAND_SECTION
1 0
2 1
3 1
SERVICE_TIME_SECTION
1 0
2 2
3 4
TIME_WINDOW_SECTION
1 0 100
2 0 50
3 10 60
DEPOT_SECTION
1
-1
EOF
"""


def test_vrplib_vrptw_with_service_time_section():
    inst = parse_instance_bytes(VRPLIB_TW.encode(), "tiny.vrp")
    assert isinstance(inst, CVRPTWInstance)
    assert inst.service_times.tolist() == [0, 2, 4]
    assert inst.time_windows[2].tolist() == [10, 60]
    assert (inst.scale, inst.max_vehicles) == (1, None)
    # 0 -> 1 at 5 (leaves 7), -> 2 at 12 (leaves 16), back at 26.
    assert check_solution(inst, [[1, 2]]) == []
    assert inst.cost([[1, 2]]) == 20


def test_scale_with_att_is_refused():
    text = VRPLIB_TW.replace("EDGE_WEIGHT_TYPE : EUC_2D", "SCALE : 10\nEDGE_WEIGHT_TYPE : ATT")
    with pytest.raises(InstanceError) as err:
        parse_instance_bytes(text.encode(), "tiny.vrp")
    assert err.value.field == "SCALE"


@pytest.mark.parametrize(("edit", "field", "words"), [
    (("SERVICE_TIME : 90", "SERVICE_TIME : -5"), "SERVICE_TIME", "service time -5 must not"),
    (("\n2 912 967\n", "\n2 967 912\n"), "TIME_WINDOW_SECTION",
     "node 2: window [967.0, 912.0]: earliest is after latest"),
])
def test_a_scaled_files_errors_quote_the_values_written(edit, field, words):
    """Regression: with SCALE 10, SERVICE_TIME -5 was reported as "service_times[1]: service
    time -50", and a window as its tenfold under the JSON field's 0-based index."""
    text = (SOLOMON / "C101.100.10.vrptw").read_text()
    assert edit[0] in text
    with pytest.raises(InstanceError) as err:
        parse_instance_bytes(text.replace(edit[0], edit[1]).encode(), "C101.vrptw")
    assert err.value.field == field and words in err.value.message, err.value


def test_times_far_from_zero_keep_a_tight_tolerance() -> None:
    """Regression: the float tolerance was 1e-9 of the horizon's end, so with Unix-second times
    (1.7e9) a customer 1.6 s late was accepted and plans through it called feasible."""
    t0 = 1.7e9
    with pytest.raises(InstanceError) as exc:
        CVRPTWInstance(coords=[[0, 0], [1001.6, 0], [0, 500]], demands=[0, 1, 1], capacity=5,
                       distance="exact",
                       time_windows=[[t0, t0 + 3600], [t0, t0 + 1000], [t0, t0 + 3600]])
    assert exc.value.field == "time_windows[1]" and "1.6 after its latest" in exc.value.message
    inst = CVRPTWInstance(coords=[[0, 0], [1000.5, 0], [0, 500]], demands=[0, 1, 1],
                          capacity=5, distance="exact",
                          time_windows=[[t0, t0 + 3600], [t0, t0 + 1001], [t0, t0 + 600]])
    assert check_solution(inst, [[1], [2]]) == []
    late = check_solution(inst, [[2, 1]])  # 500 to node 2, then 1118 more to node 1
    assert any("late at node 1" in v and "(by " in v for v in late), late


def test_integer_time_solvers_take_decimal_windows_and_refuse_overflow() -> None:
    """Regression: 2.03 × 1000 is 2029.9999999999998 in floats, so pyvrp and ortools refused the
    window [2.03, 2.03] as holding "no whole step of 0.001"; and windows of 1e12 on a map 0.01
    wide overflowed int64 and blamed the depot's window for holding no step."""
    from solvers.contract import Budget
    from solvers.routing.solve import solve

    decimal = CVRPTWInstance(coords=[[0, 0], [1, 0], [0, 1]], demands=[0, 1, 1], capacity=5,
                             distance="EUC_2D",
                             time_windows=[[0, 100], [2.03, 2.03], [0, 100]])
    wide = CVRPTWInstance(coords=[[0, 0], [0.01, 0], [0, 0.01]], demands=[0, 1, 1], capacity=2,
                          distance="exact", time_windows=[[0, 1e12], [0, 1e12], [0, 1e12]])
    for solver in ("pyvrp", "ortools"):
        sol = solve(decimal, solver, Budget(time_limit=0.5, seed=0))
        assert sol.feasible and check_solution(decimal, sol.routes) == []
        with pytest.raises(InstanceError, match="too large for this solver's integer time"):
            solve(wide, solver, Budget(time_limit=0.5, seed=0))
    assert solve(wide, "nearest_neighbor", Budget(time_limit=0.5)).feasible


def test_integer_time_solvers_keep_whole_windows_whole_on_float_distances() -> None:
    """Regression: on float distances the times were scaled by the distance scale, 10^6/3 here,
    so the zero-width window [1, 1] held no whole step and ortools and pyvrp refused a plan
    every other solver found. Whole-number times now take a whole-number scale."""
    from solvers.contract import Budget
    from solvers.routing.classical.timewindows import time_scale
    from solvers.routing.solve import solve

    inst = CVRPTWInstance(coords=[[0, 0], [1, 0], [2, 0], [3, 0]], demands=[0, 1, 1, 1],
                          capacity=3, max_vehicles=1,
                          time_windows=[[0, 10], [1, 1], [2, 2], [3, 3]])
    assert time_scale(inst, 1e6 / 3) == 333_333.0
    for solver in ("pyvrp", "ortools"):
        sol = solve(inst, solver, Budget(time_limit=0.5, seed=0))
        assert sol.feasible and sol.routes == [[1, 2, 3]] and sol.cost == pytest.approx(6.0)
