"""The independent checker must catch every kind of broken solution."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvers.routing.check import check_solution
from solvers.routing.io.solutions import read_sol
from solvers.routing.problem import CVRPInstance, TSPInstance
from solvers.routing.solution import build_solution
from tests.conftest import DATA


@pytest.fixture()
def square() -> TSPInstance:
    return TSPInstance(coords=[[0, 0], [1, 0], [1, 1], [0, 1]])


def test_valid_tour(square):
    sol = build_solution(square, [[0, 1, 2, 3]], solver="t", wall_time=0)
    assert sol.feasible and sol.violations == []
    assert sol.cost == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("routes", "words"),
    [
        ([[0, 1, 2]], "never visited"),
        ([[0, 1, 2, 2]], "more than once"),
        ([[0, 1, 2, 3, 0]], "more than once"),
        ([[0, 1, 2, 7]], "out of range"),
        ([[0, 1, 2, -1]], "out of range"),
        ([[0, 1], [2, 3]], "one tour"),
        ([], "one tour"),
    ],
)
def test_broken_tours_are_caught(square, routes, words):
    violations = check_solution(square, routes)
    assert violations and any(words in v for v in violations), violations
    sol = build_solution(square, routes, solver="t", wall_time=0)
    assert not sol.feasible


@pytest.fixture()
def small_cvrp() -> CVRPInstance:
    return CVRPInstance(coords=[[0, 0], [1, 0], [2, 0], [0, 1], [0, 2]],
                        demands=[0, 3, 3, 3, 3], capacity=6, max_vehicles=2)


@pytest.mark.parametrize(
    ("routes", "words"),
    [
        ([[1, 2], [3]], "1 customer never visited: [4]"),
        ([[1], [3]], "2 customers never visited: [2, 4]"),
        ([[1, 2], [3, 4, 1]], "1 customer visited more than once"),
        ([[1, 2, 3], [4]], "capacity"),
        ([[0, 1, 2], [3, 4]], "depot"),
        ([[1], [2], [3, 4]], "max_vehicles"),
        ([[1, 2], [3, 9]], "out of range"),
    ],
)
def test_broken_cvrp_solutions_are_caught(small_cvrp, routes, words):
    violations = check_solution(small_cvrp, routes)
    assert violations and any(words in v for v in violations), violations


def test_valid_cvrp(small_cvrp):
    sol = build_solution(small_cvrp, [[1, 2], [4, 3]], solver="t", wall_time=0)
    assert sol.feasible, sol.violations
    assert sol.cost == pytest.approx(8.0)


def test_tampered_best_known_solution_is_caught(x101):
    routes, _ = read_sol(DATA / "X-n101-k25.sol")
    # Move one customer onto another route: still every customer once, but overloaded.
    moved = [list(r) for r in routes]
    heavy = max(range(len(moved)), key=lambda k: sum(x101.demands[moved[k]]))
    donor = next(k for k in range(len(moved)) if k != heavy and len(moved[k]) > 1)
    moved[heavy].append(moved[donor].pop())
    assert any("capacity" in v for v in check_solution(x101, moved))
    # Drop a customer.
    dropped = [list(r) for r in routes]
    dropped[0] = dropped[0][1:]
    assert any("never visited" in v for v in check_solution(x101, dropped))


def test_check_scales_to_100k_nodes():
    rng = np.random.default_rng(0)
    n = 100_000
    inst = TSPInstance(coords=rng.random((n, 2)))
    tour = rng.permutation(n).tolist()
    sol = build_solution(inst, [tour], solver="random", wall_time=0)
    assert sol.feasible and math.isfinite(sol.cost)
    tour[5] = tour[6]
    assert not build_solution(inst, [tour], solver="random", wall_time=0).feasible


def test_cvrp_loads_are_checked_per_route_with_empty_and_bad_routes(small_cvrp):
    """Each overloaded route is named by its position, empty routes and out-of-range nodes
    included, as the check does it in one pass over all visits."""
    small_cvrp.max_vehicles = None
    violations = check_solution(small_cvrp, [[], [1, 2, 3], [], [4, -1, 7], []])
    assert "route 1 carries 9 > capacity 6" in violations
    assert not any(v.startswith(("route 0", "route 2", "route 3", "route 4"))
                   for v in violations)
    assert any("out of range" in v for v in violations)

