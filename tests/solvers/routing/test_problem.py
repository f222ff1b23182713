"""Distance conventions, costs against published optima, and instance validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvers.errors import InstanceError
from solvers.routing.io.solutions import read_sol, read_tour
from solvers.routing.problem import CVRPInstance, TSPInstance, coordinate_distance, integer_scale
from solvers.routing.solution import build_solution
from tests.conftest import DATA, OPTIMA


def _d(a, b, conv):
    return float(coordinate_distance(np.array([a], float), np.array([b], float), conv)[0])


def test_euc_2d_rounds_half_up_like_tsplib():
    assert _d((0, 0), (3, 4), "EUC_2D") == 5
    assert _d((0, 0), (0, 2.5), "EUC_2D") == 3  # nint(2.5) = 3, not banker's 2
    assert _d((0, 0), (0, 2.49), "EUC_2D") == 2
    assert _d((0, 0), (1, 1), "exact") == pytest.approx(math.sqrt(2))
    assert _d((0, 0), (1, 1), "CEIL_2D") == 2


def test_att_pseudo_euclidean():
    # r = sqrt(100/10) = 3.162..., nint = 3 < r, so 4
    assert _d((0, 0), (10, 0), "ATT") == 4
    # r = sqrt(900/10) = 9.49, nint = 9 < r, so 10
    assert _d((0, 0), (0, 30), "ATT") == 10
    # r = sqrt(4000/10) = 20 exactly: no round-up
    assert _d((0, 0), (20, 60), "ATT") == 20


@pytest.mark.parametrize("name", ["eil51", "berlin52", "kroA100"])
def test_optimal_tours_cost_the_published_optimum(name, data_dir):
    from solvers.routing.io.formats import load_instance

    suffix = ".tsp.gz" if name == "kroA100" else ".tsp"
    inst = load_instance(data_dir / f"{name}{suffix}")
    tour = read_tour(data_dir / f"{name}.opt.tour")
    sol = build_solution(inst, [tour], solver="reference", wall_time=0.0)
    assert sol.feasible, sol.violations
    assert sol.cost == OPTIMA[name]
    assert sol.distance == "EUC_2D"


def test_best_known_cvrp_solution_costs_its_stated_value(x101):
    routes, stated = read_sol(DATA / "X-n101-k25.sol")
    sol = build_solution(x101, routes, solver="bks", wall_time=0.0)
    assert sol.feasible, sol.violations
    assert sol.cost == stated == OPTIMA["X-n101-k25"]
    assert len(sol.routes) == 26


def test_cvrp_cost_equals_sum_of_route_costs(x101):
    routes, _ = read_sol(DATA / "X-n101-k25.sol")
    assert x101.cost(routes) == pytest.approx(sum(x101.route_cost(r) for r in routes))


def test_nearest_neighbours_match_brute_force():
    rng = np.random.default_rng(3)
    inst = TSPInstance(coords=rng.random((300, 2)))
    nb = inst.nearest_neighbours(7)
    full = inst.dense_matrix().copy()
    np.fill_diagonal(full, np.inf)
    brute = np.argsort(full, axis=1)[:, :7]
    assert (nb == brute).all()
    assert not (nb == np.arange(300)[:, None]).any()


def test_nearest_neighbours_from_a_matrix():
    rng = np.random.default_rng(4)
    pts = rng.random((40, 2))
    m = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    a = TSPInstance(distance_matrix=m).nearest_neighbours(5)
    b = TSPInstance(coords=pts).nearest_neighbours(5)
    assert (a == b).all()


def test_dense_matrix_refuses_huge_instances():
    inst = TSPInstance(coords=np.zeros((50, 2)) + np.arange(50)[:, None])
    with pytest.raises(MemoryError):
        inst.dense_matrix(limit=10)


def test_integer_scale():
    assert integer_scale(TSPInstance(coords=[[0, 0], [3, 4], [1, 1]], distance="EUC_2D")) == 1
    s = integer_scale(TSPInstance(coords=[[0, 0], [1, 1], [0, 1]]))
    assert s == pytest.approx(1e6 / math.sqrt(2))


# -- validation: every error names the field at fault ----------------------------------
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"coords": [[0, 0], [1, float("nan")], [2, 2]]}, "coords[1]"),
        ({"coords": [[0, 0], [1, float("inf")], [2, 2]]}, "coords[1]"),
        ({"coords": [[0, 0], [1, 1]]}, "coords"),
        ({"coords": [[0, 0, 0], [1, 1, 1], [2, 2, 2]]}, "coords"),
        ({"coords": "abc"}, "coords"),
        ({}, "coords"),
        ({"distance_matrix": [[0, 1], [1, 0], [2, 2]]}, "distance_matrix"),
        ({"distance_matrix": [[0, 1, 2], [1, 0, -3], [2, 3, 0]]}, "distance_matrix[1][2]"),
        ({"distance_matrix": [[0, 1, 2], [1, 0], [2, 3, 0]]}, "distance_matrix"),
        ({"coords": [[0, 0], [1, 1], [2, 2]], "distance": "GEO"}, "distance"),
        ({"coords": [[0, 0], [1, 1], [2, 2]], "node_ids": [1, 2, 1]}, "ids[2]"),
        ({"coords": [[0, 0], [1, 1], [2, 2]], "node_ids": [1, 2]}, "ids"),
    ],
)
def test_tsp_validation_names_the_field(kwargs, field):
    with pytest.raises(InstanceError) as exc:
        TSPInstance(**kwargs)
    assert exc.value.field == field


CO = [[0, 0], [1, 0], [0, 1], [1, 1]]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"demands": [0, 1, -2, 1], "capacity": 5}, "demands[2]"),
        ({"demands": [0, 1, 2.5, 1], "capacity": 5}, "demands[2]"),
        ({"demands": [0, 1, 9, 1], "capacity": 5}, "demands[2]"),
        ({"demands": [3, 1, 1, 1], "capacity": 5}, "demands[0]"),
        ({"demands": [0, 1, 1], "capacity": 5}, "demands"),
        ({"demands": [0, 1, 1, 1], "capacity": 0}, "capacity"),
        ({"demands": [0, 1, 1, 1], "capacity": 2.5}, "capacity"),
        ({"demands": [0, 1, 1, 1], "capacity": 5, "depot": 4}, "depot"),
        ({"demands": [0, 4, 4, 4], "capacity": 5, "max_vehicles": 2}, "max_vehicles"),
        ({"demands": [0, 1, 1, 1], "capacity": 5, "max_vehicles": 0}, "max_vehicles"),
    ],
)
def test_cvrp_validation_names_the_field(kwargs, field):
    with pytest.raises(InstanceError) as exc:
        CVRPInstance(coords=CO, **kwargs)
    assert exc.value.field == field


def test_cvrp_accepts_any_depot_index():
    inst = CVRPInstance(coords=CO, demands=[1, 1, 0, 1], capacity=2, depot=2)
    assert inst.customers.tolist() == [0, 1, 3]
    sol = build_solution(inst, [[0, 1], [3]], solver="hand", wall_time=0)
    assert sol.feasible
    # depot (0,1) -> (0,0) -> (1,0) -> depot, then depot -> (1,1) -> depot
    assert sol.cost == pytest.approx(1 + 1 + math.sqrt(2) + 1 + 1)


def test_with_fleet_sets_a_checked_cap_on_a_copy() -> None:
    """An upload's max_vehicles or the CLI's --max-vehicles: the cap is checked like the
    constructor's, and the instance it came from keeps its own."""
    inst = CVRPInstance(coords=[[0, 0], [1, 0], [0, 1], [1, 1]], demands=[0, 4, 4, 4],
                        capacity=8, max_vehicles=3)
    capped = inst.with_fleet(2)
    assert (capped.max_vehicles, inst.max_vehicles) == (2, 3)
    assert capped.cost([[1, 2], [3]]) == inst.cost([[1, 2], [3]])
    assert inst.with_fleet(None).max_vehicles is None
    with pytest.raises(InstanceError) as err:
        inst.with_fleet(1)
    assert err.value.field == "max_vehicles" and "at least 2" in err.value.message


def test_customers_above_half_a_vehicle_need_a_vehicle_each() -> None:
    """Demands 4, 4, 4 in vehicles of 6: the demand bound allows two vehicles, but no two
    of these customers fit together, so a cap of two is refused at once (before: it ran
    every solver to a 422 after its time limit). Demand exactly half the capacity pairs."""
    coords = [[0, 0], [1, 0], [0, 1], [1, 1]]
    with pytest.raises(InstanceError) as err:
        CVRPInstance(coords=coords, demands=[0, 4, 4, 4], capacity=6, max_vehicles=2)
    assert err.value.field == "max_vehicles" and "at least 3 vehicles" in err.value.message
    assert CVRPInstance(coords=coords, demands=[0, 4, 4, 4], capacity=6, max_vehicles=3)
    assert CVRPInstance(coords=coords, demands=[0, 3, 3, 3], capacity=6, max_vehicles=2)


def test_an_instance_owns_its_arrays():
    """Regression: an instance shared the caller's float64 arrays, so a later change bypassed
    validation (and staled cached neighbour lists)."""
    from solvers.routing.problem import CVRPTWInstance

    xy = np.random.default_rng(0).random((6, 2)) * 10
    matrix = np.ones((6, 6)) - np.eye(6)
    windows = np.array([[0.0, 1000.0]] * 6)
    service = np.zeros(6)
    tsp = TSPInstance(coords=xy)
    explicit = TSPInstance(distance_matrix=matrix, coords=xy)
    tw = CVRPTWInstance(coords=xy, demands=np.array([0, 1, 1, 1, 1, 1]), capacity=3,
                        time_windows=windows, service_times=service)
    assert not np.shares_memory(tsp.coords, xy)
    assert not np.shares_memory(explicit.matrix, matrix)
    assert not np.shares_memory(explicit.coords, xy)
    assert not np.shares_memory(tw.time_windows, windows)
    assert not np.shares_memory(tw.service_times, service)
    before = tsp.tour_cost(list(range(6)))
    xy[0] = [1e30, 1e30]  # not finite-checked any more: must not reach the instance
    assert tsp.tour_cost(list(range(6))) == before


def test_odd_inputs_are_refused_by_field():
    """Regression: node_ids=5 raised a bare TypeError, complex coordinates lost their imaginary
    parts silently, max_vehicles=10**30 was accepted."""
    xy = np.random.default_rng(0).random((5, 2))
    with pytest.raises(InstanceError, match=r"^ids: must be a list of 5 integers"):
        TSPInstance(coords=xy, node_ids=5)
    for field, kwargs in [("coords", {"coords": xy + 1j}),
                          ("distance_matrix", {"distance_matrix": np.ones((5, 5)) * (1 + 1j)})]:
        with pytest.raises(InstanceError, match=rf"^{field}: must be real numbers"):
            TSPInstance(**kwargs)
    with pytest.raises(InstanceError, match=r"^demands: must be real numbers"):
        CVRPInstance(coords=xy, demands=[0, 1j, 1, 1, 1], capacity=5)
    with pytest.raises(InstanceError, match=r"^max_vehicles: must be at most 2147483647"):
        CVRPInstance(coords=xy, demands=[0, 1, 1, 1, 1], capacity=5, max_vehicles=10**30)
    assert CVRPInstance(coords=xy, demands=[0, 1, 1, 1, 1], capacity=5,
                        max_vehicles=1000).max_vehicles == 1000


def test_cvrp_cost_joins_routes_through_the_depot_skipping_empty_ones() -> None:
    """Each route is closed at the depot (wherever it is); empty routes cost nothing."""
    inst = CVRPInstance(coords=[[0, 0], [3, 0], [3, 4], [0, 4]], demands=[0, 1, 1, 0],
                        capacity=2, depot=3)
    assert inst.cost([[], [0], [], [1, 2], []]) == pytest.approx(4 + 4 + 5 + 4 + 3)
    assert inst.cost([]) == 0.0 and inst.cost([[], []]) == 0.0
