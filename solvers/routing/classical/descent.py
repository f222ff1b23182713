"""The granular CVRP descent (``cvrp_descent``) and the polish that ends every neural plan:
moves between routes, where ``localsearch`` is 2-opt + Or-opt along one tour.

For CVRP: relocate, swap and 2-opt* moves between each customer and its nearest neighbours (a
granular neighbourhood, after Toth and Vigo's granular tabu search), first improvement, until
no move saves distance or time runs out; the kernels are in ``moves``, and ``kicks`` goes on
from the local optimum. For CVRPTW the polish is ``timewindows.exchange_descent`` (moves
that keep the windows); for the TSP, ``localsearch``'s 2-opt + Or-opt.

The neural solvers (``reld``, ``polynet``) end their plans with these. Their CVRP
reconstruction rebuilds groups of routes with the model and keeps each group's customers, so
a customer that belongs to a neighbouring group's route, or a route tail that should be
swapped with another's, is left alone; one pass of the three CVRP moves takes those detours
out in milliseconds. Every CVRP move keeps capacities and orientation (no route is reversed),
so asymmetric distances are handled exactly; the descent never adds a route and drops a
route it empties. ``python -m benchmarks.neural --polish`` measures what each
descent earns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from solvers.routing.classical.localsearch import two_opt
from solvers.routing.classical.moves import NEIGHBOURS, Plan
from solvers.routing.classical.routepolish import MAX_BATCHED, polish_all
from solvers.routing.classical.timewindows import exchange_descent
from solvers.routing.problem import CVRPInstance, CVRPTWInstance, TSPInstance

#: The polish runs at least this long even when the time kept for it is gone (a
#: reconstruction round that overran): 100-customer plans converge in 10-30 ms.
MIN_POLISH_SECONDS = 0.01
#: Share of the time left at reconstruction that the neural solvers keep for ``polish``
#: (about 20 ms on 100 customers).
POLISH_SHARE = 0.05
#: The same with time windows, whose exchange descent takes longer (CVRPTW100 from 4 s
#: polynet and reld plans: 50 ms on average, 140 ms at most).
POLISH_SHARE_TW = 0.1


def tour_polish_keep(n: int, remaining: float) -> float:
    """Seconds a TSP solve keeps for ``polish_tour`` out of the ``remaining`` time at
    reconstruction: what 2-opt + Or-opt takes from a neural tour (about 2 ms at 1,000 nodes)
    with a margin, never more than POLISH_SHARE of it."""
    return max(0.0, min(POLISH_SHARE * remaining, 0.005 + 5e-6 * n))


#: 2-opt + Or-opt passes at most in ``polish_tour`` (each from a fresh queue).
MAX_TOUR_POLISH_PASSES = 5


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
    # the queue of the neighbour-list search can settle with a move left (a second call
    # took 0.04% more from a 600-node PolyNet tour): repeat while a pass still gains
    for _ in range(MAX_TOUR_POLISH_PASSES - 1):
        again, moves = two_opt(instance.coords, improved)
        if moves == 0:
            break
        improved = again
    after = instance.tour_cost(improved)
    out = [int(v) for v in improved] if after < before else tour
    after = min(after, before)
    return {"tour": out, "factor": after / before if before > 0 else 1.0,
            "gain_percent": round(100 * (1 - after / before), 4) if before > 0 else 0.0,
            "seconds": round(time.perf_counter() - t0, 4)}


def polish(instance: CVRPInstance, routes: list[list[int]], deadline: float) -> dict[str, Any]:
    """The final plan of a neural CVRP or CVRPTW solve through a classical descent:
    ``cvrp_descent`` for CVRP, ``timewindows.exchange_descent`` for CVRPTW (relocations,
    tail exchanges, swaps and reversals that keep windows). Returns the polished
    ``routes``, ``factor`` (cost after / before), and for the stats ``gain_percent``,
    ``seconds`` and ``converged`` (False when the deadline, not the descent, ended it: the plan
    may then hold a move or two more).

    The models' plans keep detours that these moves remove in milliseconds
    (``benchmarks.neural --polish``, 64 instances at 1 s: CVRP100 -0.31% (polynet) and -0.37% (reld)
    in at most 17 ms, CVRPTW100 -1.12% and -1.14% in at most 42 ms with relocations alone;
    Solomon R201 -5.8%)."""
    t0 = time.perf_counter()
    # a reconstruction that overran its share must not leave the plan unpolished: the
    # descent converges in milliseconds on small instances, so it always gets a few
    deadline = max(deadline, t0 + MIN_POLISH_SECONDS)
    before = instance.cost(routes)
    if isinstance(instance, CVRPTWInstance):
        polished = exchange_descent(instance, routes, deadline)
    else:
        polished = cvrp_descent(instance, routes, deadline)
    after = instance.cost(polished)
    if after > before:
        # every move saves distance by the descent's own arithmetic; an ulp's difference from
        # the instance's costing (a rounding convention at .5) must not make a plan worse
        polished, after = routes, before
    done = time.perf_counter()
    return {"routes": polished, "factor": after / before if before > 0 else 1.0,
            "gain_percent": round(100 * (1 - after / before), 4) if before > 0 else 0.0,
            "seconds": round(done - t0, 4), "converged": done < deadline}


def polish_routes(xy: np.ndarray, depot: int, routes: list[list[int]]) -> list[list[int]]:
    """Classical 2-opt + Or-opt inside each route (the depot stays in its route), on the
    coordinates' Euclidean lengths: the intra-route half of ``sil_ls`` and ``ils`` on CVRP.
    Routes of up to ``routepolish.MAX_BATCHED`` customers go through one compiled call (the
    same local optima, 34 s -> 2 s for 121,000 routes); longer ones one by one here."""
    batched = polish_all(xy, depot, routes)
    out = []
    for r, done in zip(routes, batched, strict=True):
        if len(r) < 4 or len(r) <= MAX_BATCHED:
            out.append(done)
            continue
        nodes = np.array([depot, *r], dtype=np.int64)
        local, _ = two_opt(xy[nodes], np.arange(nodes.size))
        local = np.roll(local, -int(np.flatnonzero(local == 0)[0]))
        out.append(nodes[local[1:]].tolist())
    return out


def cvrp_descent(instance: CVRPInstance, routes: list[list[int]], deadline: float,
                 neighbours: int = NEIGHBOURS,
                 cancelled: Callable[[], bool] | None = None) -> list[list[int]]:
    """``routes`` improved by relocate, swap and 2-opt* moves until a local optimum,
    ``deadline`` (``time.perf_counter()``) or ``cancelled`` (a descent at 100K nodes runs
    for seconds); each returned route keeps the capacity.

    The moves run in numba over linked routes with distances computed on demand from the
    coordinates under the instance's convention (or read from its matrix), so no N×N matrix
    is built and the descent scales to the largest CVRPs the service takes."""
    routes = [list(r) for r in routes if r]
    if len(routes) == 0 or instance.n < 3 or time.perf_counter() >= deadline:
        return routes
    plan = Plan(instance, routes, neighbours)
    plan.descend(deadline, cancelled)
    return plan.routes()
