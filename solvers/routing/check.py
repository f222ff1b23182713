"""Independent feasibility checks for routing solutions.

Written apart from every solver and from the cost code on purpose: a solver's own bookkeeping
is never trusted. Each check returns human-readable violations; an empty list means feasible.
All checks are vectorized so a 100K-node solution is checked in milliseconds.
"""

from __future__ import annotations

import numpy as np

from solvers.routing.problem import CVRPInstance, RoutingInstance, TSPInstance

_MAX_LISTED = 5


def _visit_counts(n: int, visits: np.ndarray) -> tuple[list[str], np.ndarray]:
    problems: list[str] = []
    out_of_range = (visits < 0) | (visits >= n)
    if out_of_range.any():
        bad = visits[out_of_range][:_MAX_LISTED].tolist()
        problems.append(f"node indices out of range [0, {n - 1}]: {bad}")
        visits = visits[~out_of_range]
    return problems, np.bincount(visits, minlength=n)


def _listed(idx: np.ndarray) -> str:
    shown = idx[:_MAX_LISTED].tolist()
    more = "" if idx.size <= _MAX_LISTED else f" and {idx.size - _MAX_LISTED} more"
    return f"{shown}{more}"


def check_tsp(instance: TSPInstance, tour: list[int]) -> list[str]:
    """Every node exactly once."""
    t = np.asarray(tour, dtype=np.int64)
    problems, counts = _visit_counts(instance.n, t)
    missing = np.flatnonzero(counts == 0)
    twice = np.flatnonzero(counts > 1)
    if missing.size:
        problems.append(f"{missing.size} nodes never visited: {_listed(missing)}")
    if twice.size:
        problems.append(f"{twice.size} nodes visited more than once: {_listed(twice)}")
    return problems


def check_cvrp(instance: CVRPInstance, routes: list[list[int]]) -> list[str]:
    """Every customer exactly once, no depot inside a route, loads within capacity, fleet cap."""
    problems: list[str] = []
    flat = (
        np.concatenate([np.asarray(r, dtype=np.int64) for r in routes])
        if routes
        else np.zeros(0, dtype=np.int64)
    )
    range_problems, counts = _visit_counts(instance.n, flat)
    problems += range_problems
    if counts[instance.depot] > 0:
        problems.append(
            f"the depot ({instance.depot}) appears inside a route; routes start and end at the "
            "depot implicitly, so list customers only"
        )
    cust = np.ones(instance.n, dtype=bool)
    cust[instance.depot] = False
    missing = np.flatnonzero(cust & (counts == 0))
    twice = np.flatnonzero(cust & (counts > 1))
    if missing.size:
        problems.append(f"{missing.size} customers never visited: {_listed(missing)}")
    if twice.size:
        problems.append(f"{twice.size} customers visited more than once: {_listed(twice)}")
    for k, r in enumerate(routes):
        idx = np.asarray(r, dtype=np.int64)
        idx = idx[(idx >= 0) & (idx < instance.n)]
        load = int(instance.demands[idx].sum())
        if load > instance.capacity:
            problems.append(f"route {k} carries {load} > capacity {instance.capacity}")
    used = sum(1 for r in routes if len(r))
    if instance.max_vehicles is not None and used > instance.max_vehicles:
        problems.append(f"{used} routes used but max_vehicles is {instance.max_vehicles}")
    return problems


def check_solution(instance: RoutingInstance, routes: list[list[int]]) -> list[str]:
    """Dispatch to the problem's check; a TSP must come as exactly one tour."""
    if isinstance(instance, TSPInstance):
        if len(routes) != 1:
            return [f"a TSP solution is one tour, got {len(routes)} routes"]
        return check_tsp(instance, routes[0])
    if isinstance(instance, CVRPInstance):
        return check_cvrp(instance, routes)
    raise TypeError(f"no checker for {type(instance).__name__}")
