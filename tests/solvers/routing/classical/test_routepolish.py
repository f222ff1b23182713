"""The batched route polish gives what the route-by-route path gives, and scales."""

from __future__ import annotations

import numpy as np

from solvers.routing.classical.construct import random_insertion_routes
from solvers.routing.classical.localsearch import two_opt
from solvers.routing.classical.routepolish import polish_all
from solvers.routing.generate import random_cvrp
from solvers.routing.problem import CVRPInstance


def _one_by_one(xy: np.ndarray, depot: int, routes: list[list[int]]) -> list[list[int]]:
    """The per-route path: 2-opt + Or-opt on each route with the depot, k-d tree lists."""
    out = []
    for r in routes:
        if len(r) < 4:
            out.append(r)
            continue
        nodes = np.array([depot, *r], dtype=np.int64)
        local, _ = two_opt(xy[nodes], np.arange(nodes.size))
        local = np.roll(local, -int(np.flatnonzero(local == 0)[0]))
        out.append(nodes[local[1:]].tolist())
    return out


def test_batched_polish_matches_the_per_route_path() -> None:
    coords, demands, capacity = random_cvrp(np.random.default_rng(7), 2001)
    inst = CVRPInstance(coords=coords, demands=demands, capacity=capacity)
    routes = random_insertion_routes(inst, 0)
    routes += [[], [5]]  # an empty route and a single customer come back as they were
    xy = np.ascontiguousarray(coords)
    got = polish_all(xy, inst.depot, routes)
    assert got == _one_by_one(xy, inst.depot, routes)
    assert sorted(c for r in got for c in r) == sorted(c for r in routes for c in r)
    assert inst.cost(got) < inst.cost(routes)


def test_duplicate_points_and_a_depot_elsewhere() -> None:
    """Several customers on one spot (integer coordinates, as in CVRPLIB) and the depot not
    at index 0."""
    rng = np.random.default_rng(3)
    xy = rng.integers(0, 6, size=(40, 2)).astype(float)
    routes = [list(range(0, 12)), list(range(13, 40))]  # depot 12
    got = polish_all(xy, 12, routes)
    assert [sorted(r) for r in got] == [sorted(r) for r in routes]
    length = lambda rs: sum(  # noqa: E731
        float(np.hypot(*np.diff(xy[[12, *r, 12]], axis=0).T).sum()) for r in rs)
    assert length(got) <= length(routes) + 1e-9


def test_empty_plan() -> None:
    assert polish_all(np.zeros((1, 2)), 0, []) == []
