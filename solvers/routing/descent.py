"""Classical descents that end the neural solvers' plans. For CVRP: relocate, swap and
2-opt* moves between each customer and its nearest neighbours (a granular neighbourhood,
after Toth and Vigo's granular tabu search), first improvement, until no move saves distance
or time runs out; for CVRPTW, relocation that keeps the windows; for the TSP, 2-opt + Or-opt.

The neural solvers (``reld``, ``polynet``) end their plans with these. Their CVRP
reconstruction rebuilds groups of routes with the model and keeps each group's customers, so
a customer that belongs to a neighbouring group's route, or a route tail that should be
swapped with another's, is left alone; one pass of the three CVRP moves takes those detours
out in milliseconds. Every CVRP move keeps capacities and orientation (no route is reversed),
so asymmetric distances are handled exactly; the descent never adds a route and drops a
route it empties. ``python -m benchmarks.polish`` measures what each descent earns.

``fleet_repair`` (route elimination, then relocation) is the classical step that makes a
plan meet a fleet cap, which the neural decoding does not aim for.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from solvers.routing.localsearch import two_opt
from solvers.routing.problem import CVRPInstance, CVRPTWInstance, TSPInstance
from solvers.routing.timewindows import eliminate_routes, relocate_descent

#: Neighbours per customer in the granular neighbourhood.
NEIGHBOURS = 20
#: Above this many nodes the descent is not run: it keeps a dense distance matrix (as the
#: CVRPTW descent does), 32 MB at 2,000 nodes.
MAX_NODES = 2_000
#: The polish runs at least this long even when the time kept for it is gone (a
#: reconstruction round that overran): 100-customer plans converge in 10-30 ms.
MIN_POLISH_SECONDS = 0.01
#: Share of the time left at reconstruction that the neural solvers keep for ``polish``
#: (about 20 ms on 100 customers).
POLISH_SHARE = 0.05


def tour_polish_keep(n: int, remaining: float) -> float:
    """Seconds a TSP solve keeps for ``polish_tour`` out of the ``remaining`` time at
    reconstruction: what 2-opt + Or-opt takes from a neural tour (about 2 ms at 1,000 nodes)
    with a margin, never more than POLISH_SHARE of it."""
    return max(0.0, min(POLISH_SHARE * remaining, 0.005 + 5e-6 * n))


def polish_tour(instance: TSPInstance, tour: list[int], deadline: float) -> dict[str, Any]:
    """The final tour of a neural TSP solve through 2-opt + Or-opt over 10-nearest-neighbour
    lists (``localsearch.two_opt``, numba) to a local optimum. Returns ``tour``, ``factor``
    (cost after / before), and for the stats ``gain_percent`` and ``seconds``.

    The moves are judged on the coordinates' Euclidean lengths; the tour is kept only when
    the instance's own cost (a rounding convention, a user's matrix) is not worse. It has no
    deadline: from a neural tour it takes milliseconds (TSP1000 after 5 s of reld: -2.0% in
    2 ms, ad hoc), and the solvers keep that time for it (``tour_polish_keep``)."""
    t0 = time.perf_counter()
    if instance.coords is None or instance.n < 5:
        return {"tour": tour, "factor": 1.0, "gain_percent": 0.0, "seconds": 0.0}
    before = instance.tour_cost(tour)
    improved, _ = two_opt(instance.coords, np.asarray(tour, dtype=np.int64))
    after = instance.tour_cost(improved)
    out = [int(v) for v in improved] if after < before else tour
    after = min(after, before)
    return {"tour": out, "factor": after / before if before > 0 else 1.0,
            "gain_percent": round(100 * (1 - after / before), 4) if before > 0 else 0.0,
            "seconds": round(time.perf_counter() - t0, 4)}


def polish(instance: CVRPInstance, routes: list[list[int]], deadline: float) -> dict[str, Any]:
    """The final plan of a neural CVRP or CVRPTW solve through a classical descent:
    ``cvrp_descent`` for CVRP, ``timewindows.relocate_descent`` for CVRPTW (single customers
    to cheaper places that keep windows). Returns the polished ``routes``, ``factor`` (cost
    after / before), and for the stats ``gain_percent`` and ``seconds``.

    The models' plans keep detours that these moves remove in milliseconds
    (``benchmarks.polish``, 64 instances at 1 s: CVRP100 -0.31% (polynet) and -0.37% (reld)
    in at most 17 ms, CVRPTW100 -1.12% and -1.14% in at most 42 ms; Solomon R201 -5.8%)."""
    t0 = time.perf_counter()
    # a reconstruction that overran its share must not leave the plan unpolished: the
    # descent converges in milliseconds on small instances, so it always gets a few
    deadline = max(deadline, t0 + MIN_POLISH_SECONDS)
    before = instance.cost(routes)
    if isinstance(instance, CVRPTWInstance):
        polished = relocate_descent(instance, routes, deadline)
    elif instance.n <= MAX_NODES:
        polished = cvrp_descent(instance, routes, deadline)
    else:
        return {"routes": routes, "factor": 1.0, "gain_percent": 0.0, "seconds": 0.0,
                "skipped": f"above {MAX_NODES:,} nodes"}
    after = instance.cost(polished)
    if after > before:
        # every move saves distance by the descent's own arithmetic; an ulp's difference from
        # the instance's costing (a rounding convention at .5) must not make a plan worse
        polished, after = routes, before
    return {"routes": polished, "factor": after / before if before > 0 else 1.0,
            "gain_percent": round(100 * (1 - after / before), 4) if before > 0 else 0.0,
            "seconds": round(time.perf_counter() - t0, 4)}


#: Share of the remaining time the fleet repair (route elimination) may take; it stops as
#: soon as the fleet fits, leaving the rest to reconstruction.
REPAIR_SHARE = 0.5


def fleet_repair(instance: CVRPInstance, routes: list[list[int]], deadline: float,
                 seed: int) -> dict[str, Any]:
    """Route elimination (``timewindows.eliminate_routes``; capacity only on a plain CVRP) on
    a plan that breaks the fleet cap, then a relocation descent to take out the detours the
    ejections leave: ``routes`` is the repaired plan when it fits the fleet, else None.

    The neural solvers decode routes until the customers are served, so a tight
    ``max_vehicles`` is met only by luck: reconstruction and the polish never add a route but
    never remove one on purpose either."""
    fleet = instance.max_vehicles
    assert fleet is not None
    routes = [r for r in routes if r]
    t0 = time.perf_counter()
    fixed = eliminate_routes(instance, routes, fleet, deadline, seed)
    out: dict[str, Any] = {"routes": None, "routes_before": len(routes),
                           "routes_after": len(fixed)}
    if len(fixed) <= fleet:
        repaired = instance.cost(fixed)
        out["routes"] = relocate_descent(instance, fixed, deadline)
        out["routes_after"] = len(out["routes"])
        out["descent_gain_percent"] = round(
            100 * (1 - instance.cost(out["routes"]) / max(repaired, 1e-12)), 4)
    out["seconds"] = round(time.perf_counter() - t0, 4)
    return out


def cvrp_descent(instance: CVRPInstance, routes: list[list[int]], deadline: float,
                 neighbours: int = NEIGHBOURS) -> list[list[int]]:
    """``routes`` improved by relocate, swap and 2-opt* moves until a local optimum or
    ``deadline`` (``time.perf_counter()``); each returned route keeps the capacity."""
    n = instance.n
    depot = instance.depot
    routes = [list(r) for r in routes if r]
    if len(routes) == 0 or n < 3 or time.perf_counter() >= deadline:
        return routes
    matrix = _matrix(instance)
    np.fill_diagonal(matrix, 0.0)  # a user's matrix may carry a diagonal; the cost ignores it
    # nested lists index about twice as fast from Python as a numpy matrix (the search is
    # scalar code), but take a while to build: kept to moderate sizes
    d: Any = matrix.tolist() if n <= 1_000 else matrix
    near = instance.nearest_neighbours(min(neighbours, n - 1)).tolist()
    demand = [int(q) for q in instance.demands]
    cap = int(instance.capacity)
    eps = 1e-9 * max(1.0, float(np.max(matrix)))
    state = _State(routes, demand, n)
    improved = True
    while improved and time.perf_counter() < deadline:
        improved = False
        for c in range(n):
            if c == depot or time.perf_counter() >= deadline:
                continue
            for v in near[c]:
                if v == depot:
                    continue
                if (_relocate(state, d, depot, cap, eps, c, v)
                        or _swap(state, d, depot, cap, eps, c, v)
                        or _two_opt_star(state, d, depot, cap, eps, c, v)):
                    improved = True
                    break
    return [r for r in state.routes if r]


def _matrix(instance: CVRPInstance) -> np.ndarray:
    """The instance's distances as a dense float64 matrix of its own (the diagonal is zeroed
    in it)."""
    return np.array(instance.dense_matrix(), dtype=np.float64)


class _State:
    """Routes with each customer's route and position, and each route's load."""

    def __init__(self, routes: list[list[int]], demand: list[int], n: int) -> None:
        self.routes = routes
        self.demand = demand
        self.route_of = [-1] * n
        self.pos = [-1] * n
        self.load = [0] * len(routes)
        for k in range(len(routes)):
            self.refresh(k)

    def refresh(self, k: int) -> None:
        route = self.routes[k]
        for i, c in enumerate(route):
            self.route_of[c] = k
            self.pos[c] = i
        self.load[k] = sum(self.demand[c] for c in route)


def _neighbours_in_route(route: list[int], i: int, depot: int) -> tuple[int, int]:
    return (route[i - 1] if i else depot), (route[i + 1] if i + 1 < len(route) else depot)


def _relocate(s: _State, d: Any, depot: int, cap: int, eps: float, c: int, v: int) -> bool:
    """Move c next to v (just after it, or just before it)."""
    a, b = s.route_of[c], s.route_of[v]
    if a != b and s.load[b] + s.demand[c] > cap:
        return False
    ra, rb = s.routes[a], s.routes[b]
    i = s.pos[c]
    p, q = _neighbours_in_route(ra, i, depot)
    removal = d[p][c] + d[c][q] - d[p][q]
    j = s.pos[v]
    vp, vq = _neighbours_in_route(rb, j, depot)
    # after v: v -> c -> vq; before v: vp -> c -> v
    best, where = None, -1
    for add, at in ((d[v][c] + d[c][vq] - d[v][vq], j + 1), (d[vp][c] + d[c][v] - d[vp][v], j)):
        if a == b and (at == i or at == i + 1):
            continue  # c's own place
        if add < removal - eps and (best is None or add < best):
            best, where = add, at
    if best is None:
        return False
    if a == b:
        # c's neighbours in its own route: the formula above holds when the removal and the
        # insertion do not share an edge, which the two skipped places exclude
        del ra[i]
        ra.insert(where - 1 if where > i else where, c)
        s.refresh(a)
    else:
        del ra[i]
        rb.insert(where, c)
        s.refresh(a)
        s.refresh(b)
    return True


def _swap(s: _State, d: Any, depot: int, cap: int, eps: float, c: int, v: int) -> bool:
    """Exchange c and v between two routes."""
    a, b = s.route_of[c], s.route_of[v]
    if a == b:
        return False
    dc, dv = s.demand[c], s.demand[v]
    if s.load[a] - dc + dv > cap or s.load[b] - dv + dc > cap:
        return False
    ra, rb = s.routes[a], s.routes[b]
    i, j = s.pos[c], s.pos[v]
    p, q = _neighbours_in_route(ra, i, depot)
    vp, vq = _neighbours_in_route(rb, j, depot)
    delta = (d[p][v] + d[v][q] - d[p][c] - d[c][q]
             + d[vp][c] + d[c][vq] - d[vp][v] - d[v][vq])
    if delta >= -eps:
        return False
    ra[i], rb[j] = v, c
    s.refresh(a)
    s.refresh(b)
    return True


def _two_opt_star(s: _State, d: Any, depot: int, cap: int, eps: float, c: int, v: int) -> bool:
    """Join c's route up to c with v's route from v on, and v's head with c's tail (the edge
    c -> v enters the plan); orientation is kept, so the move is exact for asymmetric
    distances."""
    a, b = s.route_of[c], s.route_of[v]
    if a == b:
        return False
    ra, rb = s.routes[a], s.routes[b]
    i, j = s.pos[c], s.pos[v]
    head_a = sum(s.demand[x] for x in ra[:i + 1])
    head_b = sum(s.demand[x] for x in rb[:j])
    if head_a + s.load[b] - head_b > cap or head_b + s.load[a] - head_a > cap:
        return False
    q = ra[i + 1] if i + 1 < len(ra) else depot  # c's successor
    vp = rb[j - 1] if j else depot  # v's predecessor
    delta = d[c][v] + d[vp][q] - d[c][q] - d[vp][v]
    if delta >= -eps:
        return False
    new_a = ra[:i + 1] + rb[j:]
    new_b = rb[:j] + ra[i + 1:]
    s.routes[a], s.routes[b] = new_a, new_b
    s.refresh(a)
    s.refresh(b)
    return True
