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

``fleet_repair`` (route elimination, then bin packing where elimination stalls, then
relocation) is the classical step that makes a plan meet a fleet cap, which the neural
decoding does not aim for.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from solvers.compiling import cache_is_cold, compiled_beside
from solvers.contract import Clock, beating
from solvers.errors import NoSolutionError
from solvers.routing.classical.fleet import pack_routes
from solvers.routing.classical.localsearch import two_opt
from solvers.routing.classical.timewindows import (
    ATTEMPT_POPS,
    ELIMINATION_MAX_NODES,
    PERTURB_MOVES,
    eliminate_routes,
    exchange_descent,
    relocate_descent,
)
from solvers.routing.problem import CVRPInstance, CVRPTWInstance, TSPInstance

#: Neighbours per customer in the granular neighbourhood.
NEIGHBOURS = 20
#: The polish runs at least this long even when the time kept for it is gone (a
#: reconstruction round that overran): 100-customer plans converge in 10-30 ms.
MIN_POLISH_SECONDS = 0.01
#: Share of the time left at reconstruction that the neural solvers keep for ``polish``
#: (about 20 ms on 100 customers).
POLISH_SHARE = 0.05
#: The same with time windows, whose exchange descent takes longer (CVRPTW100 from 4 s
#: polynet and reld plans: 50 ms on average, 140 ms at most, var/s34/tw_ls2.py).
POLISH_SHARE_TW = 0.1

#: The kicks' annealing temperature at the start and at the end of a run, in units of the
#: plan's mean arc: a kick that lengthens the plan by d is kept with probability exp(−d / T).
#: Measured (var/s31, 30 s from the ils start, seed 0) against keeping only shorter plans:
#: uniform CVRP1K 34.41M -> 33.54M; X-n502-k39 0.38% -> 0.16% above the best-known;
#: X-n783-k48 2.55% -> 1.99%; X-n936-k151 3.37% -> 2.34%. (0.3 and 3 were each better on
#: one of the four, worse on the other three.)
KICK_TEMPERATURE = (1.0, 0.01)
#: When 19 in 20 kicks in a window of ``RUIN_WINDOW`` fail because a removed customer finds
#: no route with room (under a fleet cap that leaves a few units of room, X-n101-k25 capped
#: at 25: every kick of 20 failed and the plan never moved), the kicks turn to
#: ``penalized.penalized_kicks``, which may overload routes inside a kick and repair them,
#: removing this many customers. Ad hoc (2 s, seeds 0-2, X-n101-k25 cap 25): 3 / 4 / 5 / 8 /
#: 20 removed gave 34.2k / 33.3k / 33.7k / 34.5k / no kick feasible; the plain kicks, shrunk
#: to 5 removed, 37.1k. (Shrinking already at half failing, as X-n101-k25 and X-n176-k26
#: capped at 26 and X-n289-k60 at 61 do, made those 0.3-0.8% longer at 2 s, so ordinary caps
#: keep the plain kicks.)
PENALIZED_RUIN = 5
RUIN_WINDOW = 500
#: The penalized kicks' price of a unit of excess load starts at this many times the plan's
#: length per unit of demand (1 made the kicks' recreate overload so much that few kicks
#: were repaired: 37.4k against 33.7k at 5 and 33.6k at 20, same runs as above) ...
PENALTY_START = 10.0
#: ... and is raised by ``PENALTY_STEP[0]`` after a window of ``PENALTY_WINDOW`` kicks (or
#: more, a call's batch) of which fewer than ``PENALTY_TARGET[0]`` ended feasible, lowered by
#: ``PENALTY_STEP[1]`` above ``PENALTY_TARGET[1]``, as HGS adapts its penalties.
PENALTY_WINDOW = 100
PENALTY_TARGET = (0.3, 0.5)
PENALTY_STEP = (1.2, 0.85)


def kick_temperature(start: float, end: float,
                     schedule: tuple[float, float] = KICK_TEMPERATURE) -> tuple[float, float]:
    """The temperatures of a geometric cooling from ``schedule[0]`` to ``schedule[1]`` at two
    fractions of a whole run, for callers that kick in several slices of their time
    (``sil_ls`` on CVRP, ``ils`` on the TSP with ``ils.TOUR_TEMPERATURE``)."""
    hot, cold = schedule
    return (hot * (cold / hot) ** min(max(start, 0.0), 1.0),
            hot * (cold / hot) ** min(max(end, 0.0), 1.0))


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
    (``benchmarks.polish``, 64 instances at 1 s: CVRP100 -0.31% (polynet) and -0.37% (reld)
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


#: Share of the remaining time the fleet repair (route elimination) may take; it stops as
#: soon as the fleet fits, leaving the rest to reconstruction.
REPAIR_SHARE = 0.5
#: Share of the repair's time that route elimination may take on a plain CVRP before the
#: repair turns to bin packing (``packing.pack_routes``; 0.1 s on X-n101-k25 capped at 25,
#: where elimination stalls at 26 routes however long it runs).
ELIMINATION_SHARE = 0.75


def fleet_repair(instance: CVRPInstance, routes: list[list[int]], deadline: float,
                 seed: int) -> dict[str, Any]:
    """Route elimination on a plan that breaks the fleet cap (``timewindows.eliminate_routes``
    up to ``ELIMINATION_MAX_NODES`` nodes, with or without time windows; above it, on a
    plain CVRP, ``eliminate_capacity_routes``), then a descent to take out the detours the
    ejections leave (``relocate_descent``; ``cvrp_descent`` above the limit): ``routes`` is
    the repaired plan when it fits the fleet, else None. On a plain CVRP elimination gets
    ``ELIMINATION_SHARE`` of the time; if it has not reached the cap by then,
    ``packing.pack_routes`` packs its plan into the cap's routes (``packed`` and
    ``eliminated_to`` in the figures say so).

    The neural solvers decode routes until the customers are served, so a tight
    ``max_vehicles`` is met only by luck: reconstruction and the polish never add a route but
    never remove one on purpose either."""
    fleet = instance.max_vehicles
    assert fleet is not None
    routes = [r for r in routes if r]
    t0 = time.perf_counter()
    windows = isinstance(instance, CVRPTWInstance)
    large = instance.n > ELIMINATION_MAX_NODES
    # a plain CVRP keeps a share of the time for the packing, should elimination stall
    until = deadline if windows else t0 + ELIMINATION_SHARE * max(0.0, deadline - t0)
    if large and not windows:
        fixed = eliminate_capacity_routes(instance, routes, fleet, until, seed)
    else:
        fixed = eliminate_routes(instance, routes, fleet, until, seed)
    out: dict[str, Any] = {"routes": None, "routes_before": len(routes),
                           "routes_after": len(fixed)}
    if len(fixed) > fleet and not windows:
        out["eliminated_to"] = len(fixed)
        packed = pack_routes(instance, fixed, fleet, deadline, seed)
        out["packed"] = packed is not None
        if packed is not None:
            fixed = packed
    if windows and large and len(routes) > fleet:
        out["skipped"] = (f"route elimination with time windows runs on instances of up to "
                          f"{ELIMINATION_MAX_NODES:,} nodes")
    if len(fixed) <= fleet:
        repaired = instance.cost(fixed)
        out["routes"] = (cvrp_descent(instance, fixed, max(deadline, time.perf_counter()
                                                           + MIN_POLISH_SECONDS))
                         if large else relocate_descent(instance, fixed, deadline))
        out["routes_after"] = len(out["routes"])
        out["descent_gain_percent"] = round(
            100 * (1 - instance.cost(out["routes"]) / max(repaired, 1e-12)), 4)
    out["seconds"] = round(time.perf_counter() - t0, 4)
    return out


def fit_fleet(solver: str, instance: CVRPInstance, routes: list[list[int]], clock: Clock,
              seed: int, stats: dict[str, Any]) -> list[list[int]]:
    """A split start (``ils``, ``sil_ls``) brought within ``max_vehicles`` by
    ``fleet_repair`` in at most ``REPAIR_SHARE`` of the time left (the kicks that follow
    never add a route); its figures go to ``stats["fleet_repair"]``. Raises
    ``NoSolutionError`` (field ``max_vehicles``) when route elimination cannot get there.

    The split takes as many vehicles as a cheapest plan wants, so any cap below that count
    used to be refused outright (X-n101-k25 with 26 vehicles: the split start needs 30);
    with 25, whose vehicles hold 3 units more than the demand, elimination stalled at 26
    and the solve was refused until the bin packing came."""
    cap = instance.fleet_cap()
    if len(routes) <= cap:
        return routes
    allotted = REPAIR_SHARE * clock.remaining
    repair = fleet_repair(instance, routes, time.perf_counter() + allotted, seed)
    stats["fleet_repair"] = {k: v for k, v in repair.items() if k != "routes"}
    if repair["routes"] is None:
        # elimination tries until its deadline whether or not the cap can be met, so the
        # time it took says nothing: the fleet is the field at fault
        packing = (", nor could bin packing fit its customers into that many"
                   if "packed" in repair else "")
        raise NoSolutionError(
            f"{solver}'s split start needs {len(routes)} vehicles and route elimination "
            f"brought it to {repair['routes_after']} in {repair['seconds']:.1f} s, but "
            f"max_vehicles is {cap}{packing}; a longer time limit may get there, or try the "
            "pyvrp or ortools solver", field="max_vehicles", more_time_helps=False)
    return repair["routes"]


def polish_routes(xy: np.ndarray, depot: int, routes: list[list[int]]) -> list[list[int]]:
    """Classical 2-opt + Or-opt inside each route (the depot stays in its route), on the
    coordinates' Euclidean lengths: the intra-route half of ``sil_ls`` and ``ils`` on CVRP."""
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
    plan = _Plan(instance, routes, neighbours)
    plan.descend(deadline, cancelled)
    return plan.routes()


def cvrp_kicks(instance: CVRPInstance, routes: list[list[int]], deadline: float, seed: int,
               neighbours: int = NEIGHBOURS, ruin: int = 20,
               on_slice: Callable[[float, int], None] | None = None,
               slice_seconds: float = 1.0,
               cancelled: Callable[[], bool] | None = None,
               temperature: tuple[float, float] = KICK_TEMPERATURE,
               on_descent: Callable[[float], None] | None = None,
               ) -> tuple[list[list[int]], int]:
    """``cvrp_descent``, then kicks until ``deadline``: remove a customer and its ``ruin`` − 1
    nearest neighbours, put each back, in random order, at its cheapest place next to a
    neighbour (any route with room if none), run the descent over the customers around them,
    and keep the result if the plan got shorter, or longer by less than an annealing
    threshold (``temperature``, cooling from its first to its second value over the time to
    ``deadline``; see ``KICK_TEMPERATURE``); else restore it. The shortest plan met is
    returned. A ruin-and-recreate search in the manner of the TSP's ``ils`` kicks, for the
    plans ``sil_ls`` and ``ils`` build; ``temperature=(0, 0)`` keeps only shorter plans.
    ``on_slice`` hears the shortest length and the kicks kept so far about every
    ``slice_seconds``, when ``cancelled`` is also asked (a cancelled job keeps the best plan
    so far). Through the first descent (about 15 s at 100K nodes) ``on_descent``, if given,
    else ``on_slice`` with no kick kept, hears the starting length as often. Returns the
    routes and the kicks kept.

    When 19 in 20 kicks fail for want of room (a fleet cap with almost none to spare), the
    rest of the run is ``penalized.penalized_kicks``: a few customers removed, overloading
    allowed inside a kick at an adapted price and repaired before it is kept (see
    ``PENALIZED_RUIN``)."""
    from solvers.routing.classical.penalized import penalized_kicks

    routes = [list(r) for r in routes if r]
    if len(routes) == 0 or instance.n < 3 or time.perf_counter() >= deadline:
        return routes, 0
    plan = _Plan(instance, routes, neighbours)
    if on_descent is None and on_slice is not None:
        on_descent = lambda length: on_slice(length, 0)  # noqa: E731
    if on_descent is None:
        plan.descend(deadline, cancelled)
    else:  # the first descent of a 100K-node plan runs ~15 s: report the start meanwhile
        start_length = instance.cost(routes)
        plan.descend(deadline, beating(cancelled, lambda: on_descent(start_length),
                                       slice_seconds))
    rng = np.random.default_rng(seed)
    customers = np.array([c for c in range(instance.n) if c != instance.depot], dtype=np.int64)
    kept = 0
    batch = 1  # kicks per call, grown to about 5 ms of work between looks at the clock
    total = _total(plan.succ, plan.n, plan.count, plan.xy, plan.mat, plan.conv, plan.depot)
    arrays = (plan.succ, plan.pred, plan.route_of, plan.cum, plan.load)
    best = [a.copy() for a in arrays]  # the shortest plan met (annealing can leave it)
    dirty = np.zeros(plan.count, dtype=np.bool_)  # routes changed since best was copied
    best_total = total
    # the temperature, in units of the plan's mean arc, cools geometrically over the kicks'
    # time from temperature[0] to temperature[1]
    arc = total / max(1, len(customers) + len(routes))
    t_start, t_end = temperature
    start = time.perf_counter()
    span = max(deadline - start, 1e-9)
    next_report = start + slice_seconds
    first = True  # one kick even past the deadline: a warm-up must compile the kernel
    size = min(ruin, plan.near.shape[1] + 1)  # customers a kick removes (see PENALIZED_RUIN)
    tried = gave_up = 0  # kicks, and kicks given up for want of room, in this window
    penalty = 0.0  # the price of a unit of excess load, once the kicks are penalized
    feasible = 0  # penalized kicks that ended feasible, in this window
    while (now := time.perf_counter()) < deadline or first:
        first = False
        if now >= next_report:
            if on_slice is not None:
                on_slice(best_total, kept)
            if cancelled is not None and cancelled():
                break
            next_report = now + slice_seconds
        seeds = customers[rng.integers(0, len(customers), batch)]
        keys = rng.random((batch, ruin))  # the order the removed customers go back in
        if t_start > 0:
            frac = min(1.0, (now - start) / span)
            heat = arc * t_start * (t_end / t_start) ** frac
            slack = -heat * np.log(1.0 - rng.random(batch))
        else:
            slack = np.zeros(batch)
        if penalty > 0:
            total, k, best_total, fine = penalized_kicks(
                seeds, keys, slack, size, total, best_total, penalty, *arrays, *best, dirty,
                plan.demand, plan.cap, plan.near, plan.xy, plan.mat, plan.conv, plan.n,
                plan.depot, plan.count, plan.eps)
            kept += k
            tried += batch
            feasible += fine
            if tried >= PENALTY_WINDOW:
                if feasible < PENALTY_TARGET[0] * tried:
                    penalty *= PENALTY_STEP[0]
                elif feasible > PENALTY_TARGET[1] * tried:
                    penalty *= PENALTY_STEP[1]
                tried = feasible = 0
        else:
            total, k, best_total, failed = _kicks(seeds, keys, slack, size, total, best_total,
                                                  *arrays, *best, dirty, plan.demand, plan.cap,
                                                  plan.near, plan.xy, plan.mat, plan.conv,
                                                  plan.n, plan.depot, plan.count, plan.eps)
            kept += k
            tried += batch
            gave_up += failed
            if tried >= RUIN_WINDOW:
                if gave_up * 20 > tried * 19:
                    # the routes are too full to take customers back: relax the capacity
                    # inside the kicks (see PENALIZED_RUIN)
                    size = min(PENALIZED_RUIN, size)
                    penalty = PENALTY_START * total / max(1.0, float(plan.demand.sum()))
                tried = gave_up = 0
        per_kick = (time.perf_counter() - now) / batch
        batch = max(1, min(2 * batch, int(0.005 / max(per_kick, 1e-7))))
    if best_total < total:
        for a, b in zip(arrays, best, strict=True):
            a[:] = b
    return plan.routes(), kept


class _Plan:
    """Routes as linked lists for the numba kernels: route r runs from id n + r to id
    n + count + r (both stand for the depot), with each node's route and running load."""

    def __init__(self, instance: CVRPInstance, routes: list[list[int]],
                 neighbours: int) -> None:
        n = self.n = instance.n
        self.depot = instance.depot
        self.xy, self.mat, self.conv, self.eps = _distance_data(instance)
        self.near = np.ascontiguousarray(instance.nearest_neighbours(min(neighbours, n - 1)),
                                         dtype=np.int64)
        self.demand = np.asarray(instance.demands, dtype=np.int64)
        self.cap = int(instance.capacity)
        count = self.count = len(routes)
        self.size = n + 2 * count
        self.succ = np.full(self.size, -1, dtype=np.int64)
        self.pred = np.full(self.size, -1, dtype=np.int64)
        for r, route in enumerate(routes):
            chain = np.array([n + r, *route, n + count + r], dtype=np.int64)
            self.succ[chain[:-1]] = chain[1:]
            self.pred[chain[1:]] = chain[:-1]
        self.route_of = np.full(self.size, -1, dtype=np.int64)
        self.cum = np.zeros(self.size, dtype=np.int64)
        self.load = np.zeros(count, dtype=np.int64)
        for r in range(count):
            _refresh(r, self.succ, self.route_of, self.cum, self.load, self.demand, n, count)

    def descend(self, deadline: float, cancelled: Callable[[], bool] | None = None) -> None:
        """First-improvement sweeps over all customers until one makes no move (or the
        deadline, or a cancel)."""
        chunk = max(1, _EVALUATIONS_PER_CALL // max(1, self.near.shape[1]))

        def go_on() -> bool:
            return time.perf_counter() < deadline and not (cancelled is not None and cancelled())

        improved = True
        while improved and go_on():
            improved = False
            c = 0
            while c < self.n and go_on():
                c, moves = _sweep(c, chunk, self.succ, self.pred, self.route_of, self.cum,
                                  self.load, self.demand, self.cap, self.near, self.xy,
                                  self.mat, self.conv, self.n, self.depot, self.count,
                                  self.eps)
                improved = improved or moves > 0

    def routes(self) -> list[list[int]]:
        out: list[list[int]] = []
        for r in range(self.count):
            route: list[int] = []
            v = int(self.succ[self.n + r])
            while v < self.n:
                route.append(v)
                v = int(self.succ[v])
            if route:
                out.append(route)
        return out


#: Move evaluations per call into the numba sweep between two looks at the clock (about a
#: millisecond).
_EVALUATIONS_PER_CALL = 20_000
_CONVENTIONS = {"exact": 0, "EUC_2D": 1, "CEIL_2D": 2, "FLOOR_2D": 3, "ATT": 4}


def _distance_data(instance: CVRPInstance) -> tuple[np.ndarray, np.ndarray, int, float]:
    """(coordinates, matrix, convention code, tolerance) for the numba kernels: a matrix
    instance passes its matrix (code -1), a coordinate one its coordinates and convention.
    The tolerance keeps rounding noise from counting as a saving."""
    if instance.matrix is not None:
        mat = np.ascontiguousarray(instance.matrix, dtype=np.float64)
        finite = mat[np.isfinite(mat)]
        scale = float(np.max(np.abs(finite))) if finite.size else 1.0
        return np.zeros((1, 2)), mat, -1, 1e-9 * max(1.0, scale)
    assert instance.coords is not None
    xy = np.ascontiguousarray(instance.coords, dtype=np.float64)
    span = float(np.hypot(*(xy.max(axis=0) - xy.min(axis=0))))
    return xy, np.zeros((1, 1)), _CONVENTIONS[instance.distance], 1e-9 * max(1.0, span)


@njit(cache=True, inline="always")
def _d(a: int, b: int, xy: np.ndarray, mat: np.ndarray, conv: int, n: int,
       depot: int) -> float:
    """The distance a -> b under the instance's convention (as ``squared_to_distance``);
    ids from n up are route ends standing for the depot; a node to itself is 0."""
    if a >= n:
        a = depot
    if b >= n:
        b = depot
    if a == b:
        return 0.0
    if conv < 0:
        return mat[a, b]
    dx = xy[a, 0] - xy[b, 0]
    dy = xy[a, 1] - xy[b, 1]
    sq = dx * dx + dy * dy
    if conv == 0:
        return math.sqrt(sq)
    if conv == 1:
        return math.floor(math.sqrt(sq) + 0.5)
    if conv == 2:
        return math.ceil(math.sqrt(sq))
    if conv == 3:
        return math.floor(math.sqrt(sq))
    r = math.sqrt(sq / 10.0)
    t = math.floor(r + 0.5)
    return t + 1.0 if t < r else t


@njit(cache=True, inline="always")
def _insertion(x: int, c: int, y: int, xy: np.ndarray, mat: np.ndarray, conv: int, n: int,
               depot: int) -> float:
    """What putting c between x and y adds to the plan's length."""
    return (_d(x, c, xy, mat, conv, n, depot) + _d(c, y, xy, mat, conv, n, depot)
            - _d(x, y, xy, mat, conv, n, depot))


@njit(cache=True)
def _refresh(r: int, succ: np.ndarray, route_of: np.ndarray, cum: np.ndarray,
             load: np.ndarray, demand: np.ndarray, n: int, count: int) -> None:
    """Route r's membership and running loads, walked from its start (id n + r) to its end
    (id n + count + r)."""
    v = n + r
    route_of[v] = r
    cum[v] = 0
    total = 0
    v = succ[v]
    while v < n:
        total += demand[v]
        route_of[v] = r
        cum[v] = total
        v = succ[v]
    route_of[v] = r
    cum[v] = total
    load[r] = total


@njit(cache=True)
def _sweep(first: int, customers: int, succ: np.ndarray, pred: np.ndarray,
           route_of: np.ndarray, cum: np.ndarray, load: np.ndarray, demand: np.ndarray,
           cap: int, near: np.ndarray, xy: np.ndarray, mat: np.ndarray, conv: int, n: int,
           depot: int, count: int, eps: float) -> tuple[int, int]:
    """Customers first .. first + customers − 1: for each, the first of relocate, swap and
    2-opt* with one of its neighbours that saves distance is made. Returns the next customer
    and the number of moves made."""
    moves = 0
    c = first
    stop = min(n, first + customers)
    while c < stop:
        if _improve(c, succ, pred, route_of, cum, load, demand, cap, near, xy, mat, conv, n,
                    depot, count, eps):
            moves += 1
        c += 1
    return c, moves


@njit(cache=True)
def _improve(c: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
             cum: np.ndarray, load: np.ndarray, demand: np.ndarray, cap: int,
             near: np.ndarray, xy: np.ndarray, mat: np.ndarray, conv: int, n: int, depot: int,
             count: int, eps: float) -> bool:
    """The first of relocate, swap and 2-opt* between c and one of its neighbours that saves
    distance, made; False if none does."""
    if c == depot or route_of[c] < 0:
        return False
    for t in range(near.shape[1]):
        v = near[c, t]
        if v == depot:
            continue
        if v == c or route_of[v] < 0:
            continue
        if (_relocate(c, v, succ, pred, route_of, cum, load, demand, cap, xy, mat,
                      conv, n, depot, count, eps)
                or _swap(c, v, succ, pred, route_of, cum, load, demand, cap, xy, mat,
                         conv, n, depot, count, eps)
                or _two_opt_star(c, v, succ, pred, route_of, cum, load, demand, cap,
                                 xy, mat, conv, n, depot, count, eps)):
            return True
    return False


@njit(cache=True)
def _total(succ: np.ndarray, n: int, count: int, xy: np.ndarray, mat: np.ndarray, conv: int,
           depot: int) -> float:
    """The plan's length."""
    total = 0.0
    for r in range(count):
        v = n + r
        while True:
            w = succ[v]
            total += _d(v, w, xy, mat, conv, n, depot)
            if w >= n + count:
                break
            v = w
    return total


#: Passes of the local descent after a kick, over the customers around it.
_KICK_PASSES = 20


@njit(cache=True)
def _route_length(r: int, succ: np.ndarray, xy: np.ndarray, mat: np.ndarray, conv: int,
                  n: int, depot: int, count: int) -> float:
    """Route r's length, from its start id to its end id."""
    length = 0.0
    v = n + r
    while True:
        w = succ[v]
        length += _d(v, w, xy, mat, conv, n, depot)
        if w >= n + count:
            return length
        v = w


@njit(cache=True)
def _save_route(r: int, succ: np.ndarray, n: int, saved: np.ndarray, saved_routes: np.ndarray,
                seq_start: np.ndarray, seq: np.ndarray, counts: np.ndarray) -> None:
    """Route r's customers appended to a kick's undo record (``seq``, the i-th saved route
    from ``seq_start[i]``); ``counts`` holds the routes and customers saved so far."""
    ns, top = counts[0], counts[1]
    saved[r] = True
    saved_routes[ns] = r
    seq_start[ns] = top
    w = succ[n + r]
    while w < n:
        seq[top] = w
        top += 1
        w = succ[w]
    seq_start[ns + 1] = top
    counts[0] = ns + 1
    counts[1] = top


# -- the parts of a kick that ``_kicks`` and ``penalized.penalized_kicks`` share ---------------


@njit(cache=True)
def _pick_ruin(c0: int, ruin: int, removed: np.ndarray, near: np.ndarray,
               route_of: np.ndarray, depot: int) -> int:
    """The seed customer ``c0`` and its nearest customers, ``ruin`` at most, into
    ``removed``; returns how many."""
    m = 0
    for t in range(-1, near.shape[1]):
        if m == ruin:
            break
        v = c0 if t < 0 else near[c0, t]
        if v == depot or route_of[v] < 0:
            continue
        removed[m] = v
        m += 1
    return m


@njit(cache=True)
def _neighbourhood(removed: np.ndarray, m: int, near: np.ndarray, listed: np.ndarray,
                   around: np.ndarray) -> int:
    """The first ``m`` removed customers and their neighbours, each once, into ``around``
    (``listed`` all false before and after); returns how many."""
    a = 0
    for i in range(m):
        for t in range(-1, near.shape[1]):
            v = removed[i] if t < 0 else near[removed[i], t]
            if not listed[v]:
                listed[v] = True
                around[a] = v
                a += 1
    for i in range(a):
        listed[around[i]] = False
    return a


@njit(cache=True)
def _save_reachable(around: np.ndarray, a: int, saved: np.ndarray, saved_routes: np.ndarray,
                    seq_start: np.ndarray, seq: np.ndarray, counts: np.ndarray,
                    succ: np.ndarray, route_of: np.ndarray, near: np.ndarray, xy: np.ndarray,
                    mat: np.ndarray, conv: int, n: int, depot: int, count: int) -> float:
    """Save (``_save_route``, from none saved) the route of every customer of ``around`` and
    of their neighbours: all a kick's moves can reach. Returns their length."""
    counts[0] = 0
    counts[1] = 0
    before = 0.0
    for i in range(a):
        for t in range(-1, near.shape[1]):
            v = around[i] if t < 0 else near[around[i], t]
            if v == depot or route_of[v] < 0 or saved[route_of[v]]:
                continue
            r = route_of[v]
            _save_route(r, succ, n, saved, saved_routes, seq_start, seq, counts)
            before += _route_length(r, succ, xy, mat, conv, n, depot, count)
    return before


@njit(cache=True)
def _routes_length(routes: np.ndarray, m: int, succ: np.ndarray, xy: np.ndarray,
                   mat: np.ndarray, conv: int, n: int, depot: int, count: int) -> float:
    """The length of the first ``m`` of ``routes``."""
    total = 0.0
    for i in range(m):
        total += _route_length(routes[i], succ, xy, mat, conv, n, depot, count)
    return total


@njit(cache=True)
def _copy_dirty(dirty: np.ndarray, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
                cum: np.ndarray, load: np.ndarray, s_succ: np.ndarray, s_pred: np.ndarray,
                s_route_of: np.ndarray, s_cum: np.ndarray, s_load: np.ndarray, n: int,
                count: int) -> None:
    """Copy the routes marked ``dirty`` (changed since the last copy) into the ``s_`` arrays,
    the shortest plan met, and clear their marks."""
    for r in range(count):
        if not dirty[r]:
            continue
        dirty[r] = False
        v = n + r
        while True:
            s_succ[v] = succ[v]
            s_pred[v] = pred[v]
            s_route_of[v] = route_of[v]
            s_cum[v] = cum[v]
            if v >= n + count:
                break
            v = succ[v]
        s_load[r] = load[r]


@njit(cache=True)
def _restore_saved(ns: int, saved_routes: np.ndarray, seq_start: np.ndarray, seq: np.ndarray,
                   succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray, cum: np.ndarray,
                   load: np.ndarray, demand: np.ndarray, n: int, count: int) -> None:
    """Relink the ``ns`` saved routes as ``_save_route`` recorded them (a rejected kick)."""
    for i in range(ns):
        r = saved_routes[i]
        prev = n + r
        for j in range(seq_start[i], seq_start[i + 1]):
            succ[prev] = seq[j]
            pred[seq[j]] = prev
            prev = seq[j]
        succ[prev] = n + count + r
        pred[n + count + r] = prev
        _refresh(r, succ, route_of, cum, load, demand, n, count)


@njit(cache=True)
def _kicks(seeds: np.ndarray, keys: np.ndarray, slack: np.ndarray, ruin: int, total: float,
           best_total: float, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
           cum: np.ndarray, load: np.ndarray, s_succ: np.ndarray, s_pred: np.ndarray,
           s_route_of: np.ndarray, s_cum: np.ndarray, s_load: np.ndarray,
           dirty: np.ndarray, demand: np.ndarray, cap: int, near: np.ndarray, xy: np.ndarray,
           mat: np.ndarray, conv: int, n: int, depot: int, count: int,
           eps: float) -> tuple[float, int, float, int]:
    """One kick per seed customer (see ``cvrp_kicks``): kept when the plan gets shorter, or
    longer by less than the kick's ``slack``; the shortest plan met is kept in the ``s_``
    arrays. Returns the plan's length, the kicks kept, the shortest length and the kicks
    given up because a removed customer found no route with room.

    A kick costs what it touches, not the plan's size: every move it makes is between routes
    that hold a removed customer, a customer it descends around, or one of their neighbours
    (or the route a customer falls back to), so those routes are saved before it starts and
    are all that a rejected kick relinks and all whose length changes. The shortest plan is
    kept the same way: ``dirty`` marks the routes that kept kicks changed since it was
    last copied, and only those are copied when a shorter plan comes."""
    kept = 0
    failed = 0
    k = near.shape[1]
    removed = np.empty(ruin, dtype=np.int64)
    around = np.empty(ruin * (k + 1), dtype=np.int64)
    listed = np.zeros(n, dtype=np.bool_)
    saved = np.zeros(count, dtype=np.bool_)
    saved_routes = np.empty(count, dtype=np.int64)
    seq_start = np.empty(count + 1, dtype=np.int64)
    seq = np.empty(n, dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)  # routes and customers saved by the kick
    for s in range(seeds.shape[0]):
        m = _pick_ruin(seeds[s], ruin, removed, near, route_of, depot)
        a = _neighbourhood(removed, m, near, listed, around)
        # save every route a move of this kick can reach, before anything moves
        before = _save_reachable(around, a, saved, saved_routes, seq_start, seq, counts, succ,
                                 route_of, near, xy, mat, conv, n, depot, count)
        ns = counts[0]
        for i in range(m):
            _unlink(removed[i], succ, pred, route_of, load, demand)
        for i in range(ns):
            _refresh(saved_routes[i], succ, route_of, cum, load, demand, n, count)
        ok = True
        order = np.argsort(keys[s, :m], kind="mergesort")
        for i in range(m):
            c = removed[order[i]]
            best = np.inf
            bx = -1
            by = -1
            for t in range(k):
                v = near[c, t]
                if v == depot or route_of[v] < 0 or load[route_of[v]] + demand[c] > cap:
                    continue
                for side in range(2):
                    x = v if side == 0 else pred[v]
                    y = succ[v] if side == 0 else v
                    add = _insertion(x, c, y, xy, mat, conv, n, depot)
                    if add < best:
                        best, bx, by = add, x, y
            if bx < 0:  # no neighbour's route has room: any route that has
                for r in range(count):
                    if load[r] + demand[c] > cap:
                        continue
                    x = n + r
                    y = succ[x]
                    add = _insertion(x, c, y, xy, mat, conv, n, depot)
                    if add < best:
                        best, bx, by = add, x, y
            if bx < 0:
                ok = False
                failed += 1
                break
            r = route_of[bx]
            if not saved[r]:  # a fallback route: saved before it changes
                _save_route(r, succ, n, saved, saved_routes, seq_start, seq, counts)
                before += _route_length(r, succ, xy, mat, conv, n, depot, count)
            succ[bx] = c
            pred[c] = bx
            succ[c] = by
            pred[by] = c
            _refresh(r, succ, route_of, cum, load, demand, n, count)
        ns = counts[0]
        keep = False
        if ok:
            for _ in range(_KICK_PASSES):
                moved = False
                for i in range(a):
                    if _improve(around[i], succ, pred, route_of, cum, load, demand, cap, near,
                                xy, mat, conv, n, depot, count, eps):
                        moved = True
                if not moved:
                    break
            new_total = total - before + _routes_length(saved_routes, ns, succ, xy, mat, conv,
                                                        n, depot, count)
            if new_total < total - eps or (slack[s] > 0 and new_total < total + slack[s]):
                keep = True
                total = new_total
                kept += 1
                for i in range(ns):
                    dirty[saved_routes[i]] = True
                if total < best_total - eps:
                    best_total = total
                    _copy_dirty(dirty, succ, pred, route_of, cum, load, s_succ, s_pred,
                                s_route_of, s_cum, s_load, n, count)
        if not keep:
            _restore_saved(ns, saved_routes, seq_start, seq, succ, pred, route_of, cum, load,
                           demand, n, count)
        for i in range(ns):
            saved[saved_routes[i]] = False
    return total, kept, best_total, failed


@njit(cache=True)
def _relocate(c: int, v: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
              cum: np.ndarray, load: np.ndarray, demand: np.ndarray, cap: int,
              xy: np.ndarray, mat: np.ndarray, conv: int, n: int, depot: int, count: int,
              eps: float) -> bool:
    """Move c next to v (just after it, or just before it), whichever saves more."""
    a = route_of[c]
    b = route_of[v]
    if a != b and load[b] + demand[c] > cap:
        return False
    p = pred[c]
    q = succ[c]
    removal = _insertion(p, c, q, xy, mat, conv, n, depot)
    best = removal - eps
    bx = -1
    by = -1
    if v != p:  # after v (v == p is c's own place)
        x = v
        y = succ[v]
        add = _insertion(x, c, y, xy, mat, conv, n, depot)
        if add < best:
            best, bx, by = add, x, y
    x = pred[v]
    if x != c:  # before v (v == q is c's own place)
        y = v
        add = _insertion(x, c, y, xy, mat, conv, n, depot)
        if add < best:
            best, bx, by = add, x, y
    if bx < 0:
        return False
    succ[p] = q
    pred[q] = p
    succ[bx] = c
    pred[c] = bx
    succ[c] = by
    pred[by] = c
    _refresh(a, succ, route_of, cum, load, demand, n, count)
    if b != a:
        _refresh(b, succ, route_of, cum, load, demand, n, count)
    return True


@njit(cache=True)
def _swap(c: int, v: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
          cum: np.ndarray, load: np.ndarray, demand: np.ndarray, cap: int, xy: np.ndarray,
          mat: np.ndarray, conv: int, n: int, depot: int, count: int, eps: float) -> bool:
    """Exchange c and v between two routes."""
    a = route_of[c]
    b = route_of[v]
    if a == b:
        return False
    dc = demand[c]
    dv = demand[v]
    if load[a] - dc + dv > cap or load[b] - dv + dc > cap:
        return False
    if _swap_delta(c, v, succ, pred, xy, mat, conv, n, depot) >= -eps:
        return False
    _exchange(c, v, succ, pred)
    _refresh(a, succ, route_of, cum, load, demand, n, count)
    _refresh(b, succ, route_of, cum, load, demand, n, count)
    return True


@njit(cache=True)
def _swap_delta(c: int, v: int, succ: np.ndarray, pred: np.ndarray, xy: np.ndarray,
                mat: np.ndarray, conv: int, n: int, depot: int) -> float:
    """How much longer the plan gets when c and v (of two routes) trade places."""
    p = pred[c]
    q = succ[c]
    vp = pred[v]
    vq = succ[v]
    return (_d(p, v, xy, mat, conv, n, depot) + _d(v, q, xy, mat, conv, n, depot)
            - _d(p, c, xy, mat, conv, n, depot) - _d(c, q, xy, mat, conv, n, depot)
            + _d(vp, c, xy, mat, conv, n, depot) + _d(c, vq, xy, mat, conv, n, depot)
            - _d(vp, v, xy, mat, conv, n, depot) - _d(v, vq, xy, mat, conv, n, depot))


@njit(cache=True)
def _exchange(c: int, v: int, succ: np.ndarray, pred: np.ndarray) -> None:
    """Link c where v was and v where c was (of two routes; loads refreshed by the caller)."""
    p = pred[c]
    q = succ[c]
    vp = pred[v]
    vq = succ[v]
    succ[p] = v
    pred[v] = p
    succ[v] = q
    pred[q] = v
    succ[vp] = c
    pred[c] = vp
    succ[c] = vq
    pred[vq] = c


@njit(cache=True)
def _two_opt_star(c: int, v: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
                  cum: np.ndarray, load: np.ndarray, demand: np.ndarray, cap: int,
                  xy: np.ndarray, mat: np.ndarray, conv: int, n: int, depot: int, count: int,
                  eps: float) -> bool:
    """Join c's route up to c with v's route from v on, and v's head with c's tail (the edge
    c -> v enters the plan); orientation is kept, so the move is exact for asymmetric
    distances."""
    a = route_of[c]
    b = route_of[v]
    if a == b:
        return False
    vp = pred[v]
    head_a = cum[c]
    head_b = cum[vp]
    if head_a + load[b] - head_b > cap or head_b + load[a] - head_a > cap:
        return False
    delta = _two_opt_star_delta(c, v, succ, pred, xy, mat, conv, n, depot)
    if delta >= -eps:
        return False
    _cross_tails(c, v, a, b, succ, pred, n, count)
    _refresh(a, succ, route_of, cum, load, demand, n, count)
    _refresh(b, succ, route_of, cum, load, demand, n, count)
    return True


@njit(cache=True)
def _two_opt_star_delta(c: int, v: int, succ: np.ndarray, pred: np.ndarray, xy: np.ndarray,
                        mat: np.ndarray, conv: int, n: int, depot: int) -> float:
    """How much longer the plan gets when c's tail and v's tail (v onwards) trade routes."""
    vp = pred[v]
    q = succ[c]
    return (_d(c, v, xy, mat, conv, n, depot) + _d(vp, q, xy, mat, conv, n, depot)
            - _d(c, q, xy, mat, conv, n, depot) - _d(vp, v, xy, mat, conv, n, depot))


@njit(cache=True)
def _cross_tails(c: int, v: int, a: int, b: int, succ: np.ndarray, pred: np.ndarray, n: int,
                 count: int) -> None:
    """Route a continues after c with v's tail, route b after v's predecessor with c's old
    tail (loads refreshed by the caller)."""
    vp = pred[v]
    q = succ[c]
    end_a = n + count + a
    end_b = n + count + b
    last_a = pred[end_a]
    last_b = pred[end_b]
    succ[c] = v
    pred[v] = c
    succ[last_b] = end_a
    pred[end_a] = last_b
    if q != end_a:
        succ[vp] = q
        pred[q] = vp
        succ[last_a] = end_b
        pred[end_b] = last_a
    else:
        succ[vp] = end_b
        pred[end_b] = vp

# -- route elimination on a plain CVRP -----------------------------------------------------
# (pops per attempt and shaking moves: ``timewindows.ATTEMPT_POPS`` and ``PERTURB_MOVES``)


def eliminate_capacity_routes(instance: CVRPInstance, routes: list[list[int]],
                              max_routes: int, deadline: float, seed: int = 0,
                              neighbours: int = NEIGHBOURS) -> list[list[int]]:
    """Route elimination for a plain CVRP (capacity the only constraint) above
    ``ELIMINATION_MAX_NODES`` nodes, where ``timewindows.eliminate_routes`` (Python on a
    dense matrix) does not run: the same method (an emptied route's customers go to an
    ejection pool; each goes to its cheapest place with room, else takes the place of the
    customer with the lowest ejection counter, weighed by demand once an attempt has failed,
    whose removal lets it in; random relocations shake the plan after each ejection once an
    attempt has failed; a failed attempt gives its route back), run in numba on linked
    routes with distances computed on demand, and granular: places next to the customer's
    nearest neighbours first, any route with room only when none of those has room, and
    ejections from the routes of its neighbours first (any route only when those have no
    candidate). So no N×N matrix is built and a fleet cap holds on the largest CVRPs:
    10,000 uniform customers reach the bin-packing bound in about 1 s (var/s33).

    Below the limit the Python version stays: on X-n176-k26 capped at 26 this one reached
    the cap from ``ils``'s starts on 12 of 12 seeds in 0.01-0.16 s (the Python one 8 of 12 in
    1.8 s), but ``ils``'s 2 s runs from its plans were not better (X-n101-k25 / X-n176-k26 /
    X-n289-k60 capped, three seeds: 0.59 / 1.26 / 2.70% above the best-known against 0.28 /
    0.73 / 3.45% and 0.39 / 1.52 / 2.96% in two runs of the Python one), nor were they from a
    numba copy that weighed every place as the Python one does (0.73 / 1.84 / 3.01%).

    Returns the routes as far as it got by ``deadline`` (``time.perf_counter()``); every
    route keeps the capacity."""
    routes = [list(r) for r in routes if r]
    if len(routes) <= max_routes or instance.n < 3:
        return routes
    plan = _Plan(instance, routes, neighbours)
    rng = np.random.default_rng(seed)
    alive = np.ones(plan.count, dtype=np.bool_)
    put_back = np.ones(plan.n, dtype=np.float64)
    weighed = np.maximum(plan.demand.astype(np.float64), 1.0)
    weight = np.ones(plan.n, dtype=np.float64)
    pool = np.zeros(plan.n, dtype=np.int64)
    arrays = (plan.succ, plan.pred, plan.route_of, plan.load)
    shaking = False
    chunk = 64  # pops per kernel call, grown to about 5 ms between looks at the clock
    while int(alive.sum()) > max_routes and time.perf_counter() < deadline:
        victim = int(rng.choice(np.flatnonzero(alive)))
        saved = [a.copy() for a in arrays]
        size = _empty_route(victim, plan.succ, plan.pred, plan.route_of, plan.load, pool,
                            plan.n, plan.count)
        alive[victim] = False
        rng.shuffle(pool[:size])
        most = ATTEMPT_POPS[shaking] * plan.n
        pops = 0
        while size and pops < most and (now := time.perf_counter()) < deadline:
            size, done = _pour(pool, size, min(chunk, most - pops), int(rng.integers(2**31)),
                               shaking, put_back, weight, alive, plan.succ, plan.pred,
                               plan.route_of, plan.load, plan.demand, plan.cap, plan.near,
                               plan.xy, plan.mat, plan.conv, plan.n, plan.depot, plan.count)
            pops += done
            per_pop = (time.perf_counter() - now) / max(done, 1)
            chunk = max(1, min(2 * chunk, int(0.005 / max(per_pop, 1e-7))))
        if size:
            for a, b in zip(arrays, saved, strict=True):
                a[:] = b
            alive[victim] = True
            shaking = True
            weight = weighed
    for r in range(plan.count):
        _refresh(r, plan.succ, plan.route_of, plan.cum, plan.load, plan.demand, plan.n,
                 plan.count)
    return plan.routes()


@njit(cache=True)
def _empty_route(r: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
                 load: np.ndarray, pool: np.ndarray, n: int, count: int) -> int:
    """Take every customer out of route r into ``pool``; returns how many."""
    size = 0
    v = succ[n + r]
    while v < n:
        pool[size] = v
        size += 1
        route_of[v] = -1
        v = succ[v]
    succ[n + r] = n + count + r
    pred[n + count + r] = n + r
    load[r] = 0
    return size


@njit(cache=True, inline="always")
def _link(x: int, c: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
          load: np.ndarray, demand: np.ndarray) -> None:
    """Put c just after x, in x's route."""
    y = succ[x]
    succ[x] = c
    pred[c] = x
    succ[c] = y
    pred[y] = c
    r = route_of[x]
    route_of[c] = r
    load[r] += demand[c]


@njit(cache=True, inline="always")
def _unlink(c: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
            load: np.ndarray, demand: np.ndarray) -> None:
    p = pred[c]
    q = succ[c]
    succ[p] = q
    pred[q] = p
    load[route_of[c]] -= demand[c]
    route_of[c] = -1


@njit(cache=True)
def _cheapest_place(c: int, alive: np.ndarray, succ: np.ndarray, pred: np.ndarray,
                    route_of: np.ndarray, load: np.ndarray, demand: np.ndarray, cap: int,
                    near: np.ndarray, xy: np.ndarray, mat: np.ndarray, conv: int, n: int,
                    depot: int, count: int) -> int:
    """The node after which c goes at least cost: next to one of its neighbours in a route
    with room, else anywhere in any route with room; -1 if no route has room."""
    best = np.inf
    bx = -1
    for t in range(near.shape[1]):
        v = near[c, t]
        if v == depot or route_of[v] < 0 or load[route_of[v]] + demand[c] > cap:
            continue
        add = _insertion(v, c, succ[v], xy, mat, conv, n, depot)
        if add < best:
            best, bx = add, v
        add = _insertion(pred[v], c, v, xy, mat, conv, n, depot)
        if add < best:
            best, bx = add, pred[v]
    if bx >= 0:
        return bx
    for r in range(count):
        if not alive[r] or load[r] + demand[c] > cap:
            continue
        x = n + r
        while x < n + count:
            y = succ[x]
            add = _insertion(x, c, y, xy, mat, conv, n, depot)
            if add < best:
                best, bx = add, x
            x = y
    return bx


@njit(cache=True)
def _ejection(c: int, routes: np.ndarray, put_back: np.ndarray, weight: np.ndarray,
              succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray, load: np.ndarray,
              demand: np.ndarray, cap: int, near: np.ndarray, xy: np.ndarray, mat: np.ndarray,
              conv: int, n: int, depot: int, count: int) -> tuple[int, int]:
    """(e, x): over ``routes``, the customer e with the lowest weighed counter whose removal
    lets c into its route, and the node after which c then goes (in e's place or next to a
    neighbour of c), cheapest among ties; (-1, -1) if there is none."""
    best_key = np.inf
    best_add = np.inf
    be = -1
    bx = -1
    for k in range(routes.size):
        r = routes[k]
        need = load[r] + demand[c] - cap
        e = succ[n + r]
        while e < n:
            key = put_back[e] * weight[e]
            if demand[e] >= need and key <= best_key:
                p = pred[e]
                q = succ[e]
                # c in e's place
                add = _insertion(p, c, q, xy, mat, conv, n, depot)
                x = p
                for t in range(near.shape[1]):
                    v = near[c, t]
                    if v in (depot, e) or route_of[v] != r:
                        continue
                    a = pred[v] if pred[v] != e else pred[e]
                    b = succ[v] if succ[v] != e else succ[e]
                    ins = _insertion(v, c, b, xy, mat, conv, n, depot)
                    if ins < add:
                        add, x = ins, v
                    ins = _insertion(a, c, v, xy, mat, conv, n, depot)
                    if ins < add:
                        add, x = ins, a
                if key < best_key or add < best_add:
                    best_key, best_add, be, bx = key, add, e, x
            e = succ[e]
    return be, bx


@njit(cache=True)
def _pour(pool: np.ndarray, size: int, pops: int, seed: int, shaking: bool,
          put_back: np.ndarray, weight: np.ndarray, alive: np.ndarray, succ: np.ndarray,
          pred: np.ndarray, route_of: np.ndarray, load: np.ndarray, demand: np.ndarray,
          cap: int, near: np.ndarray, xy: np.ndarray, mat: np.ndarray, conv: int, n: int,
          depot: int, count: int) -> tuple[int, int]:
    """Up to ``pops`` customers from the top of the pool (``pool[:size]``) back into the
    routes, ejecting where none has room (``eliminate_capacity_routes``). Returns the pool's
    size and the pops made."""
    np.random.seed(seed)
    done = 0
    local = np.zeros(near.shape[1], dtype=np.int64)
    everyone = np.zeros(0, dtype=np.int64)
    while size > 0 and done < pops:
        size -= 1
        c = pool[size]
        done += 1
        x = _cheapest_place(c, alive, succ, pred, route_of, load, demand, cap, near, xy, mat,
                            conv, n, depot, count)
        if x >= 0:
            _link(x, c, succ, pred, route_of, load, demand)
            continue
        put_back[c] += 1
        # the routes of c's neighbours, once each
        m = 0
        for t in range(near.shape[1]):
            v = near[c, t]
            if v == depot or route_of[v] < 0:
                continue
            r = route_of[v]
            seen = False
            for j in range(m):
                if local[j] == r:
                    seen = True
            if not seen:
                local[m] = r
                m += 1
        e, x = _ejection(c, local[:m], put_back, weight, succ, pred, route_of, load, demand,
                         cap, near, xy, mat, conv, n, depot, count)
        if e < 0:
            if everyone.size == 0:
                everyone = np.flatnonzero(alive)
            e, x = _ejection(c, everyone, put_back, weight, succ, pred, route_of, load,
                             demand, cap, near, xy, mat, conv, n, depot, count)
        if e < 0:
            # no place even with an ejection: to the bottom of the pool, after shaking
            for j in range(size, 0, -1):
                pool[j] = pool[j - 1]
            pool[0] = c
            size += 1
        else:
            _unlink(e, succ, pred, route_of, load, demand)
            _link(x, c, succ, pred, route_of, load, demand)
            pool[size] = e
            size += 1
        if shaking:
            _shake(PERTURB_MOVES, succ, pred, route_of, load, demand, cap, near, n,
                   depot)
    return size, done


@njit(cache=True)
def _shake(moves: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
           load: np.ndarray, demand: np.ndarray, cap: int, near: np.ndarray, n: int,
           depot: int) -> None:
    """Random relocations of a customer next to one of its neighbours in a route with room."""
    for _ in range(moves):
        c = np.random.randint(n)
        if c == depot or route_of[c] < 0:
            continue
        v = near[c, np.random.randint(near.shape[1])]
        if v == depot or route_of[v] < 0 or route_of[v] == route_of[c]:
            continue
        if load[route_of[v]] + demand[c] > cap:
            continue
        _unlink(c, succ, pred, route_of, load, demand)
        _link(v if np.random.randint(2) else pred[v], c, succ, pred, route_of, load, demand)


def warm_up(alongside: Callable[[], None] | None = None) -> None:
    """Compile the descent's kernels (numba caches them on disk) before a solver's clock
    starts. On a cold cache a child process compiles the penalized kicks and the route
    elimination (half of the compile time) meanwhile (solvers.compiling); ``alongside``, a
    caller's own kernels, compiles here while the child works."""
    from solvers.routing.classical.penalized import penalized_kicks

    inst, plan = _warm_up_plan()
    with compiled_beside("solvers.routing.classical.descent:_compile_beside",
                         when=cache_is_cold(penalized_kicks, _pour)):
        cvrp_descent(inst, plan, time.perf_counter() + 60.0)
        cvrp_kicks(inst, plan, time.perf_counter() + 0.01, 0)
        # the CVRP start's split of a giant tour (QA sweep: compiled inside the first ils CVRP
        # solve's clock, 1.2 s for a 0.3 s limit on a fresh install)
        from solvers.routing.classical.construct import random_insertion_routes

        random_insertion_routes(inst, 0)
        if alongside is not None:
            alongside()
    _compile_beside()  # read from the cache the child wrote, or compiled here


def _warm_up_plan() -> tuple[CVRPInstance, list[list[int]]]:
    """Twelve nodes in three routes of a capacity-4 instance: every kernel's argument types."""
    coords = np.random.default_rng(0).random((12, 2))
    inst = CVRPInstance(coords=coords, demands=[0] + [1] * 11, capacity=4)
    return inst, [list(range(1, 12))[k:k + 4] for k in range(0, 11, 4)]


def _compile_beside() -> None:
    """The child process's part of ``warm_up``: the penalized kicks and route elimination."""
    inst, plan = _warm_up_plan()
    _penalized_warm_up(inst, plan)
    four = [[1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    eliminate_capacity_routes(inst, four, 3, time.perf_counter() + 60.0, 0)


def _penalized_warm_up(instance: CVRPInstance, routes: list[list[int]]) -> None:
    """One penalized kick, so its kernels compile before a clock (no warm-up run of
    ``cvrp_kicks`` fails enough kicks to reach them)."""
    from solvers.routing.classical.penalized import penalized_kicks

    plan = _Plan(instance, routes, NEIGHBOURS)
    arrays = (plan.succ, plan.pred, plan.route_of, plan.cum, plan.load)
    best = [a.copy() for a in arrays]
    total = _total(plan.succ, plan.n, plan.count, plan.xy, plan.mat, plan.conv, plan.depot)
    penalized_kicks(np.array([1], dtype=np.int64), np.zeros((1, PENALIZED_RUIN)), np.zeros(1),
                    PENALIZED_RUIN, total, total, 1.0, *arrays, *best,
                    np.zeros(plan.count, dtype=np.bool_), plan.demand, plan.cap, plan.near,
                    plan.xy, plan.mat, plan.conv, plan.n, plan.depot, plan.count, plan.eps)
