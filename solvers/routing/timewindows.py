"""Time-window helpers shared by the CVRPTW solvers: integer times for integer-only solvers,
and a time-oriented nearest-neighbour construction.

Integer solvers (OR-Tools, PyVRP) see times scaled to integers. When the instance's times are
already integers (Solomon files, FLOOR_2D/EUC_2D with integer windows) nothing is rounded.
Otherwise the rounding is conservative: travel and service times round up, window openings
round up and closings round down, so a schedule the integer model accepts is also on time
under the real-valued times that the independent checker simulates.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from solvers.errors import NoSolutionError
from solvers.routing.problem import CVRPTWInstance

#: Scale for float times when the distances themselves are integers (e.g. EUC_2D with windows
#: given to a tenth): three decimals survive.
FLOAT_TIME_SCALE = 1000.0


def time_scale(instance: CVRPTWInstance, distance_scale: float) -> float:
    """Factor that turns the instance's times into integers: 1 for integer data, else the
    distance scale (so travel time and distance stay the same numbers when they can)."""
    if instance.integral_times:
        return 1.0
    return distance_scale if distance_scale != 1.0 else FLOAT_TIME_SCALE


@dataclass
class IntegerTimes:
    """A CVRPTW's times as integers, ``scale`` units per instance time unit."""

    scale: float
    windows: np.ndarray  # (n, 2) int64: [earliest, latest] of service start
    service: np.ndarray  # (n,) int64

    @property
    def horizon(self) -> int:
        """The latest the integer model needs to represent: the last window closing."""
        return int(self.windows[:, 1].max())


def integer_times(instance: CVRPTWInstance, scale: float) -> IntegerTimes:
    """Windows and service times scaled to integers, rounded so the schedule stays on time."""
    w = instance.time_windows * scale
    s = instance.service_times * scale
    if instance.integral_times and scale == 1.0:
        windows = np.round(w).astype(np.int64)
        service = np.round(s).astype(np.int64)
    else:
        windows = np.stack([np.ceil(w[:, 0]), np.floor(w[:, 1])], axis=1).astype(np.int64)
        service = np.ceil(s).astype(np.int64)
    return IntegerTimes(scale, windows, service)


def integer_travel(lengths: np.ndarray, instance: CVRPTWInstance, scale: float) -> np.ndarray:
    """Travel times from edge lengths: exact for integer data, rounded up otherwise."""
    if instance.integral_times and scale == 1.0:
        return np.round(lengths).astype(np.int64)
    return np.ceil(lengths * scale).astype(np.int64)


def time_window_routes(instance: CVRPTWInstance) -> list[list[int]]:
    """Greedy routes that respect capacity and every window: from where the vehicle is, go to
    the customer whose service can start soonest (ties: the nearest) among those it can still
    reach in time and return from by the horizon; when none is left, start a new route.

    Each step looks at every unvisited customer (O(N) distances, no matrix), so the whole
    construction is O(N²) time and O(N) memory: about a second at 10K nodes. Validation
    guarantees each customer can be served alone, so every new route takes at least one.
    """
    n, depot = instance.n, instance.depot
    start, end = instance.horizon
    tol = instance.time_tolerance()
    earliest, latest = instance.earliest, instance.latest
    service, demands, capacity = instance.service_times, instance.demands, instance.capacity
    all_nodes = np.arange(n)
    home = instance.edge_lengths(all_nodes, np.full(n, depot))  # i -> depot
    unvisited = np.ones(n, dtype=bool)
    unvisited[depot] = False
    routes: list[list[int]] = []
    while unvisited.any():
        cur, t, load = depot, start, 0
        route: list[int] = []
        while True:
            cand = np.flatnonzero(unvisited & (demands <= capacity - load))
            if cand.size == 0:
                break
            d = instance.edge_lengths(np.full(cand.size, cur), cand)
            arrive = t + d
            begin = np.maximum(arrive, earliest[cand])
            ok = (arrive <= latest[cand] + tol) & (begin + service[cand] + home[cand]
                                                   <= end + tol)
            if not ok.any():
                break
            idx = np.flatnonzero(ok)
            best = idx[np.lexsort((d[idx], begin[idx]))[0]]
            nxt = int(cand[best])
            route.append(nxt)
            unvisited[nxt] = False
            t = float(begin[best] + service[nxt])
            load += int(demands[nxt])
            cur = nxt
        if not route:  # pragma: no cover - validation makes every customer servable alone
            raise NoSolutionError("a customer cannot be served by any route")
        routes.append(route)
    return routes


def fleet_for(instance: CVRPTWInstance, constructed: int) -> int:
    """Vehicles to offer a solver: the instance's cap when it has one, else enough for the
    greedy construction (windows, not capacity, usually decide how many routes are needed)."""
    if instance.max_vehicles is not None:
        return instance.fleet_cap()
    v = max(constructed, math.ceil(1.1 * instance.min_vehicles()) + 1)
    return min(v, instance.fleet_cap())


def _route_ok(route: list[int], d: np.ndarray, depot: int, start: float, end: float,
              earliest: list[float], latest: list[float], service: list[float],
              tol: float) -> bool:
    """Whether a route keeps every window and returns by the horizon (the checker's rules)."""
    t, prev = start, depot
    for node in route:
        t += d[prev, node]
        if t > latest[node] + tol:
            return False
        t = max(t, earliest[node]) + service[node]
        prev = node
    return t + d[prev, depot] <= end + tol


def eliminate_routes(instance: CVRPTWInstance, routes: list[list[int]], max_routes: int,
                     deadline: float, seed: int = 0) -> list[list[int]]:
    """Fleet repair: while there are more routes than ``max_routes``, empty one by inserting
    each of its customers where it adds the least distance in another route that keeps its
    capacity and windows; a customer with no such place may take the place of one customer of
    another route, which then moves to a third (one ejection). Routes are tried fewest
    customers first, their customers tightest window first; a route stays unless all of its
    customers find a place; when every route has failed so, routes and customers are tried in
    random orders (``seed``) until one empties. Stops at ``deadline`` (``time.perf_counter()``)
    and returns the routes repaired as far as it got.

    Neural constructions on tight windows (Solomon R1, RC1) often end a route or two over the
    cap, and reconstruction keeps the route count; this is the classical step that mends it."""
    routes = [list(r) for r in routes if r]
    if len(routes) <= max_routes or instance.n > 2_000:
        return routes
    n, depot = instance.n, instance.depot
    idx = np.arange(n)
    d = instance.edge_lengths(np.repeat(idx, n), np.tile(idx, n)).reshape(n, n)
    start, end = instance.horizon
    tol = instance.time_tolerance()
    earliest, latest = instance.earliest.tolist(), instance.latest.tolist()
    service = instance.service_times.tolist()
    demands = instance.demands.tolist()
    capacity = instance.capacity

    def ok(route: list[int]) -> bool:
        return _route_ok(route, d, depot, start, end, earliest, latest, service, tol)

    def cheapest(c: int, r: list[int], load: int) -> tuple[float, int] | None:
        """(added distance, position) of c's cheapest feasible place in r, if any."""
        if load + demands[c] > capacity:
            return None
        best: tuple[float, int] | None = None
        path = [depot, *r, depot]
        for p in range(len(r) + 1):
            add = float(d[path[p], c] + d[c, path[p + 1]] - d[path[p], path[p + 1]])
            if (best is None or add < best[0]) and ok([*r[:p], c, *r[p:]]):
                best = (add, p)
        return best

    def place(c: int, others: list[list[int]], loads: list[int]) -> bool:
        best: tuple[float, int, int] | None = None
        for k, r in enumerate(others):
            got = cheapest(c, r, loads[k])
            if got is not None and (best is None or got[0] < best[0]):
                best = (got[0], k, got[1])
        if best is not None:
            _, k, p = best
            others[k].insert(p, c)
            loads[k] += demands[c]
            return True
        for k, r in enumerate(others):  # one ejection: c takes e's route, e moves on
            for i, e in enumerate(r):
                if time.perf_counter() > deadline:
                    return False
                rest = r[:i] + r[i + 1:]
                got = cheapest(c, rest, loads[k] - demands[e])
                if got is None:
                    continue
                for j, q in enumerate(others):
                    if j == k:
                        continue
                    moved = cheapest(e, q, loads[j])
                    if moved is not None:
                        others[j].insert(moved[1], e)
                        loads[j] += demands[e]
                        others[k] = [*rest[:got[1]], c, *rest[got[1]:]]
                        loads[k] += demands[c] - demands[e]
                        return True
        return False

    rng = np.random.default_rng(seed)
    failed: set[tuple[int, ...]] = set()
    while len(routes) > max_routes and time.perf_counter() < deadline:
        order = sorted((r for r in routes if tuple(r) not in failed), key=len)
        if not order:  # every route failed in the given order: retry in random orders
            order = sorted(routes, key=lambda r: len(r) + 3 * rng.random())
            shuffled = True
        else:
            shuffled = False
        victim = order[0]
        others = [list(r) for r in routes if r is not victim]
        loads = [sum(demands[v] for v in r) for r in others]
        customers = (rng.permutation(victim).tolist() if shuffled
                     else sorted(victim, key=lambda v: latest[v]))
        if all(place(c, others, loads) for c in customers):
            routes = others
            failed.clear()
        else:
            failed.add(tuple(victim))
    return routes
