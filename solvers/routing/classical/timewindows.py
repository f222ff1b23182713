"""Time-window helpers shared by the CVRPTW solvers: integer times for integer-only solvers,
and a time-oriented nearest-neighbour construction.

Integer solvers (OR-Tools, PyVRP) see times scaled to integers. When the instance's times are
already integers (Solomon files, FLOOR_2D/EUC_2D with integer windows) nothing is rounded.
Otherwise the rounding is conservative: travel and service times round up, window openings
round up and closings round down, so a schedule the integer model accepts is also on time
under the real-valued times that the independent checker simulates.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.errors import InstanceError, NoSolutionError
from solvers.routing.problem import CVRPInstance, CVRPTWInstance

#: Scale for float times when the distances themselves are integers (e.g. EUC_2D with windows
#: given to a tenth): three decimals survive.
FLOAT_TIME_SCALE = 1000.0


def time_scale(instance: CVRPTWInstance, distance_scale: float) -> float:
    """Factor that turns the instance's times into integers: 1 for integer data, else the
    distance scale (so travel time and distance stay the same numbers when they can)."""
    if instance.integral_times:
        return 1.0
    scale = distance_scale if distance_scale != 1.0 else FLOAT_TIME_SCALE
    whole = (np.all(instance.time_windows == np.round(instance.time_windows))
             and np.all(instance.service_times == np.round(instance.service_times)))
    if whole and scale >= 1.0:
        # whole-number times stay whole (QA sweep: at 10^6/3 a window [1, 1] on float
        # distances held no whole step, and ortools and pyvrp refused it)
        return float(math.floor(scale))
    return scale


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


#: Largest scaled time the integer solvers are given: their schedules add times in int64,
#: and a float cast above this is not exact (QA sweep: windows of 1e12 on a 0.01-wide map
#: overflowed and were reported as "holding no whole step").
MAX_INTEGER_TIME = 2.0**53


def _snapped(scaled: np.ndarray) -> np.ndarray:
    """Scaled times that float error left a hair off a whole step put back on it, so that
    ceil/floor do not move them a step (QA sweep: 2.03 × 1000 = 2029.9999999999998, so a
    window [2.03, 2.03] held "no whole step of 0.001")."""
    near = np.round(scaled)
    close = np.abs(scaled - near) <= 1e-9 * np.maximum(1.0, np.abs(near))
    return np.where(close, near, scaled)


def integer_times(instance: CVRPTWInstance, scale: float) -> IntegerTimes:
    """Windows and service times scaled to integers, rounded so the schedule stays on time."""
    w = _snapped(instance.time_windows * scale)
    s = _snapped(instance.service_times * scale)
    big = np.flatnonzero(np.abs(w).max(axis=1) > MAX_INTEGER_TIME)
    if big.size:
        i = int(big[0])
        e, late = instance.time_windows[i]
        raise InstanceError(
            f"time_windows[{i}]", f"[{e:.10g}, {late:.10g}] is too large for this solver's "
            f"integer time ({1 / scale:.3g} time units a step: {np.abs(w[i]).max():.3g} steps, "
            "above 2^53); shift the times to start near 0, or use polynet, reld or "
            "nearest_neighbor, which keep exact times")
    if instance.integral_times and scale == 1.0:
        windows = np.round(w).astype(np.int64)
        service = np.round(s).astype(np.int64)
    else:
        windows = np.stack([np.ceil(w[:, 0]), np.floor(w[:, 1])], axis=1).astype(np.int64)
        service = np.ceil(s).astype(np.int64)
        empty = np.flatnonzero(windows[:, 0] > windows[:, 1])
        if empty.size:
            # e.g. [√2, √2]: valid, and solved by the solvers that work in exact times, but
            # empty once rounded inward (OR-Tools failed with "CP Solver fail", PyVRP with a
            # bare ValueError)
            i = int(empty[0])
            e, late = instance.time_windows[i]
            raise InstanceError(
                f"time_windows[{i}]", f"[{e:.10g}, {late:.10g}] holds no whole step of this "
                f"solver's integer time ({1 / scale:g} time units), so it cannot serve node "
                f"{i} on time; widen the window a little, or use polynet, reld or "
                "nearest_neighbor, which keep exact times")
    return IntegerTimes(scale, windows, service)


def check_integer_reachable(instance: CVRPTWInstance, times: IntegerTimes, out: np.ndarray,
                            back: np.ndarray, solver: str) -> None:
    """Refuse a customer that the exact times let a vehicle serve, but only just, so that the
    conservative rounding makes it late or unable to return in the integer model (e.g. leaving
    at 5 over a distance of exactly 1 into a window closing at 6). The solver would otherwise
    drop it (OR-Tools: a solution missing it) or find nothing (PyVRP). ``out``/``back``: the
    integer travel times depot -> node and node -> depot, by instance index."""
    cust = instance.customers
    if cust.size == 0:
        return
    e0, l0 = (int(t) for t in times.windows[instance.depot])
    arrive = e0 + out[cust]
    late = arrive > times.windows[cust, 1]
    home = (np.maximum(arrive, times.windows[cust, 0]) + times.service[cust] + back[cust]
            > l0)
    bad = np.flatnonzero(late | home)
    if bad.size:
        i = int(cust[bad[0]])
        what = ("arrives at the very end of its window" if late[bad[0]]
                else "can return to the depot only just in time")
        raise InstanceError(
            f"time_windows[{i}]", f"customer {i} {what}; {solver} works in whole steps of "
            f"{1 / times.scale:.3g} time units, rounded so that no schedule it accepts is late, "
            f"and in those steps it cannot serve customer {i} on time; widen its window (or the "
            "depot's) a little, or use polynet, reld or nearest_neighbor, which keep exact "
            "times")


def integer_travel(lengths: np.ndarray, instance: CVRPTWInstance, scale: float) -> np.ndarray:
    """Travel times from edge lengths: exact for integer data, rounded up otherwise."""
    if instance.integral_times and scale == 1.0:
        return np.round(lengths).astype(np.int64)
    return np.ceil(_snapped(lengths * scale)).astype(np.int64)


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


#: Random feasible relocations of customers between routes after every ejection: they shake
#: the routes so that the pool's customers meet new gaps. Solomon RC101 from its greedy 18
#: routes to its fleet of 15 (3 s, seeds 0-3): reached on 2 of 4 without them, on 4 of 4
#: with 5 or 20 (20: 0.1-1.5 s). They also make the routes longer, so the first attempt runs
#: without them (with a shorter pop limit) and only the attempts after a failed one shake.
PERTURB_MOVES = 20
#: Customers one attempt may take from the pool (per customer of the instance) before the
#: route it empties is given back and another one is tried: first without shaking, then with.
ATTEMPT_POPS = (2, 20)
#: Route elimination works on a dense distance matrix in Python; above this size it leaves
#: the routes as they are (callers say so). A plain CVRP above it goes to
#: ``descent.eliminate_capacity_routes`` (numba, granular) instead.
ELIMINATION_MAX_NODES = 2_000


class _Schedules:
    """Feasible insertion places in one route in O(1) each: the begin times along the route
    and, backwards, the latest begin at each stop that keeps every later window and the
    return by the horizon (the checker's rules, ``_route_ok``). A plain CVRP has no windows:
    every place that keeps the capacity is feasible, so the same route elimination and
    relocation serve its fleet cap."""

    def __init__(self, instance: CVRPInstance) -> None:
        n = instance.n
        self.matrix = np.array(instance.dense_matrix(), dtype=np.float64)
        np.fill_diagonal(self.matrix, 0.0)  # a user's matrix may have one; costs ignore it
        # nested lists index about twice as fast from Python as a numpy matrix (the search
        # is scalar code); kept to moderate sizes for memory
        self.d: Any = self.matrix.tolist() if n <= 1_000 else self.matrix
        self.depot = instance.depot
        if isinstance(instance, CVRPTWInstance):
            self.start, self.end = (float(t) for t in instance.horizon)
            self.tol = float(instance.time_tolerance())
            self.earliest = instance.earliest.astype(float).tolist()
            self.latest = instance.latest.astype(float).tolist()
            self.service = instance.service_times.astype(float).tolist()
        else:
            self.start, self.end, self.tol = 0.0, math.inf, 0.0
            self.earliest, self.latest, self.service = [0.0] * n, [math.inf] * n, [0.0] * n
        self.demands = [int(q) for q in instance.demands]
        self.capacity = int(instance.capacity)

    def ok(self, route: list[int]) -> bool:
        return _route_ok(route, self.matrix, self.depot, self.start, self.end, self.earliest,
                         self.latest, self.service, self.tol)

    def insertions(self, c: int, route: list[int], load: int) -> list[tuple[float, int]]:
        """(added distance, position) of every place where c keeps capacity and windows."""
        if load + self.demands[c] > self.capacity:
            return []
        d, depot, service = self.d, self.depot, self.service
        path = [depot, *route, depot]
        begin = [self.start]
        for a, b in itertools.pairwise(path):
            t = begin[-1] + (service[a] if a != depot else 0.0) + d[a][b]
            begin.append(t if b == depot else max(t, self.earliest[b]))
        latest_begin = [0.0] * len(path)
        latest_begin[-1] = self.end + self.tol
        for i in range(len(path) - 2, 0, -1):
            a = path[i]
            latest_begin[i] = min(self.latest[a] + self.tol,
                                  latest_begin[i + 1] - d[a][path[i + 1]] - service[a])
        out = []
        for p in range(len(path) - 1):
            a, b = path[p], path[p + 1]
            t = begin[p] + (service[a] if a != depot else 0.0) + d[a][c]
            if t > self.latest[c] + self.tol:
                break  # begin times only grow along the route
            if max(t, self.earliest[c]) + service[c] + d[c][b] <= latest_begin[p + 1]:
                out.append((float(d[a][c] + d[c][b] - d[a][b]), p))
        return out


def _ejection_weight(instance: CVRPInstance) -> np.ndarray:
    """What a customer's ejection counter is multiplied by when the pool picks whom to take
    out, once an attempt has failed: its demand on a plain CVRP, 1 with time windows (where
    windows, not loads, decide who fits). Measured (var/s32, X-n176-k26 capped at 26 routes,
    from ``ils``'s split starts of 33-36 routes, 1.8 s, 12 seeds): the cap was reached on 4
    seeds unweighed, on 10 weighed by demand (8 by demand squared, 7 by its square root).
    Weighed from the first attempt, X-n289-k60 capped at 61 got there faster (0.03-0.06 s
    against 0.11-0.16 s) but from worse plans: ``ils`` at 10 s ended 0.42% longer (5 of 6
    seeds); weighed only after a failure, 0.09% (level) and still 10 of 12 on X-n176-k26."""
    if isinstance(instance, CVRPTWInstance):
        return np.ones(instance.n)
    return np.maximum(np.asarray(instance.demands, dtype=np.float64), 1.0)


def eliminate_routes(instance: CVRPInstance, routes: list[list[int]], max_routes: int,
                     deadline: float, seed: int = 0) -> list[list[int]]:
    """Fleet repair: while there are more routes than ``max_routes``, empty one route into an
    ejection pool and put its customers back into the others, after Nagata and Bräysy's
    route minimization (2009), simplified to one ejection: a customer goes to its cheapest
    place that keeps capacity and windows; if it has none, it takes the place of the
    customer of another route that has been put back least often so far (a counter per
    customer, raised every time it finds no place, steers the pool away from hard
    customers), and that one goes to the pool; after each ejection a few random feasible
    relocations shake the routes. An attempt that cannot empty the pool gives its route back
    and another (random) route is tried. Stops at ``deadline`` (``time.perf_counter()``) and
    returns the routes repaired as far as it got; every route it returns keeps its windows.

    Neural constructions on tight windows (Solomon R1, RC1) often end a route or two over the
    cap, and reconstruction keeps the route count; this is the classical step that mends it.
    Solomon RC101 from its greedy 18 routes to its 15 vehicles in 0.04-1.2 s over 8 seeds
    (the former one-ejection repair without a pool stopped at 16 in 3 s).

    On a plain CVRP, where capacity is the only thing in the way, once an attempt has failed
    a customer's counter is weighed by its demand, so the pool prefers to take out small
    customers, which fit in more places (``_ejection_weight``)."""
    routes = [list(r) for r in routes if r]
    if len(routes) <= max_routes or instance.n > ELIMINATION_MAX_NODES:
        return routes
    sched = _Schedules(instance)
    demands = sched.demands
    rng = np.random.default_rng(seed)
    put_back = np.ones(instance.n)  # Nagata's penalty counters
    weighed = _ejection_weight(instance)
    weight = np.ones(instance.n)  # until an attempt fails (see _ejection_weight)

    def cheapest(c: int, others: list[list[int]], loads: list[int],
                 skip: int = -1) -> tuple[float, int, int] | None:
        """(added distance, route, position) of c's cheapest feasible place, if any."""
        best: tuple[float, int, int] | None = None
        for k, r in enumerate(others):
            if k == skip:
                continue
            for add, p in sched.insertions(c, r, loads[k]):
                if best is None or add < best[0]:
                    best = (add, k, p)
        return best

    def eject(c: int, others: list[list[int]], loads: list[int]) -> int | None:
        """c takes the place of the customer with the lowest counter whose removal lets c in
        (cheapest place among ties); the ejected customer, or None when there is none."""
        best: tuple[float, float, int, int, int] | None = None
        for k, r in enumerate(others):
            room = sched.capacity - loads[k] - demands[c]  # e must free at least -room
            for i, e in enumerate(r):
                key = float(put_back[e] * weight[e])
                if (best is not None and key > best[0]) or demands[e] < -room:
                    continue
                rest = r[:i] + r[i + 1:]
                for add, p in sched.insertions(c, rest, loads[k] - demands[e]):
                    if best is None or (key, add) < best[:2]:
                        best = (key, add, k, i, p)
        if best is None:
            return None
        _, _, k, i, p = best
        e = others[k].pop(i)
        others[k].insert(p, c)
        loads[k] += demands[c] - demands[e]
        return e

    def shake(others: list[list[int]], loads: list[int]) -> None:
        for _ in range(PERTURB_MOVES):
            a, b = (int(x) for x in rng.integers(len(others), size=2))
            if a == b or not others[a]:
                continue
            i = int(rng.integers(len(others[a])))
            c = others[a][i]
            places = sched.insertions(c, others[b], loads[b])
            if places:
                p = places[int(rng.integers(len(places)))][1]
                others[a].pop(i)
                loads[a] -= demands[c]
                others[b].insert(p, c)
                loads[b] += demands[c]

    shaking = False
    while len(routes) > max_routes and time.perf_counter() < deadline:
        victim = int(rng.integers(len(routes)))
        others = [list(r) for k, r in enumerate(routes) if k != victim]
        loads = [sum(demands[v] for v in r) for r in others]
        pool = list(routes[victim])
        pops = 0
        most = ATTEMPT_POPS[shaking] * instance.n
        while pool and pops < most and time.perf_counter() < deadline:
            c = pool.pop()
            pops += 1
            place = cheapest(c, others, loads)
            if place is not None:
                _, k, p = place
                others[k].insert(p, c)
                loads[k] += demands[c]
                continue
            put_back[c] += 1
            ejected = eject(c, others, loads)
            if ejected is None:
                pool.insert(0, c)  # no place even with an ejection: later, after shaking
            else:
                pool.append(ejected)
            if shaking:
                shake(others, loads)
        if not pool and all(sched.ok(r) for r in others):
            routes = [r for r in others if r]
        else:
            shaking = True
            weight = weighed
    return routes


def relocate_descent(instance: CVRPInstance, routes: list[list[int]],
                     deadline: float, sched: _Schedules | None = None) -> list[list[int]]:
    """Move single customers to cheaper places that keep capacity and windows (in any route,
    their own included) until no move saves distance or the deadline passes.

    The fleet repair's ejections and shaking leave detours behind (Solomon RC101 from its
    greedy routes: 19.3-20.5k at 15 routes, 17.9-18.2k after this descent, in 0.05-0.2 s);
    the descent takes them out before the reconstruction gets the routes. It never adds a
    route, and a route it empties is dropped. ``sched``: the instance's schedules when the
    caller has them (built once: a dense matrix as lists)."""
    sched = sched if sched is not None else _Schedules(instance)
    d, depot, demands = sched.d, sched.depot, sched.demands
    routes = [list(r) for r in routes if r]
    loads = [sum(demands[v] for v in r) for r in routes]
    eps = 1e-9 * max(1.0, float(sched.matrix.max()))
    improved = True
    while improved and time.perf_counter() < deadline:
        improved = False
        for a, route in enumerate(routes):
            i = 0
            while i < len(route) and time.perf_counter() < deadline:
                c = route[i]
                prev = route[i - 1] if i else depot
                nxt = route[i + 1] if i + 1 < len(route) else depot
                saving = d[prev][c] + d[c][nxt] - d[prev][nxt]
                rest = route[:i] + route[i + 1:]
                best: tuple[float, int, int] | None = None
                for b, other in enumerate(routes):
                    target, load = (rest, loads[a] - demands[c]) if b == a else (other, loads[b])
                    if b != a and not other:
                        continue
                    for add, p in sched.insertions(c, target, load):
                        if add < saving - eps and (best is None or add < best[0]):
                            best = (add, b, p)
                # removing a customer keeps a route's windows when distances keep the
                # triangle inequality; rounded ones may not, so that is checked too
                if best is None or not sched.ok(rest):
                    i += 1
                    continue
                _, b, p = best
                if b == a:
                    route[:] = [*rest[:p], c, *rest[p:]]
                else:
                    del route[i]
                    loads[a] -= demands[c]
                    routes[b].insert(p, c)
                    loads[b] += demands[c]
                improved = True
    return [r for r in routes if r]


#: Neighbours per customer that decide which route pairs the exchange moves try: two routes
#: are tried together when a customer of one has one of these among the other's customers.
EXCHANGE_NEIGHBOURS = 15


def exchange_descent(instance: CVRPInstance, routes: list[list[int]],
                     deadline: float) -> list[list[int]]:
    """``relocate_descent``, then moves that relocation alone cannot make, each taken when it
    saves distance and keeps capacity and windows: tail exchanges between two routes
    (2-opt*), swaps of one customer each between two routes and, on symmetric distances,
    reversals of a stretch of one route; then relocation again, until nothing saves distance
    or the deadline passes. It never adds a route.

    The neural CVRPTW plans keep costs that only such moves remove: on 16 generated
    CVRPTW100 after 4 s of polynet or reld (their relocation polish done), a prototype of
    these moves took 0.65% more off in about 0.1 s of Python (var/s34/tw_ls.py)."""
    routes = [list(r) for r in routes if r]
    if time.perf_counter() >= deadline:
        return routes
    sched = _Schedules(instance)
    d, depot, demands, capacity = sched.d, sched.depot, sched.demands, sched.capacity
    n = instance.n
    symmetric = bool(np.allclose(sched.matrix, sched.matrix.T))
    eps = 1e-9 * max(1.0, float(sched.matrix.max()))
    k = min(EXCHANGE_NEIGHBOURS, n - 1)
    if k > 0:
        far = sched.matrix + np.where(np.eye(n, dtype=bool), np.inf, 0.0)
        far[:, depot] = np.inf
        near = np.argpartition(far, k - 1, axis=1)[:, :k]
    else:
        near = np.zeros((n, 0), dtype=np.int64)
    routes = relocate_descent(instance, routes, deadline, sched)
    while time.perf_counter() < deadline:
        route_of = np.full(n, -1, dtype=np.int64)
        for r, route in enumerate(routes):
            route_of[route] = r
        pairs = sorted({(min(a, b), max(a, b))
                        for u in itertools.chain.from_iterable(routes)
                        for a, b in ((int(route_of[u]), int(route_of[v])) for v in near[u])
                        if b >= 0 and a != b})
        improved = False
        for a, b in pairs:
            if time.perf_counter() >= deadline:
                break
            if not routes[a] or not routes[b]:
                continue
            moved = (_exchange_tails(routes, a, b, d, depot, demands, capacity, sched, eps)
                     or _swap_one(routes, a, b, d, depot, demands, capacity, sched, eps))
            improved |= moved
        if symmetric:
            for route in routes:
                if time.perf_counter() >= deadline:
                    break
                improved |= _reverse_stretches(route, d, depot, sched, eps, deadline)
        routes = [r for r in routes if r]
        if not improved:
            break
        routes = relocate_descent(instance, routes, deadline, sched)
    return [r for r in routes if r]


#: Candidate moves (cheapest first) whose windows one exchange step checks at most: each
#: check simulates the routes, and two long routes offer thousands of candidates.
MAX_WINDOW_CHECKS = 64


def _take_first_feasible(candidates: list[tuple[float, Any]],
                         build: Any, sched: _Schedules) -> Any:
    """The cheapest of the ``MAX_WINDOW_CHECKS`` cheapest candidate moves whose new routes
    all keep their windows, or None."""
    candidates.sort(key=lambda c: c[0])
    for _, move in candidates[:MAX_WINDOW_CHECKS]:
        new = build(move)
        if all(sched.ok(r) for r in new):
            return new
    return None


def _exchange_tails(routes: list[list[int]], a: int, b: int, d: Any, depot: int,
                    demands: list[int], capacity: int, sched: _Schedules, eps: float) -> bool:
    """The best 2-opt* between routes a and b: a's head with b's tail and b's head with a's."""
    ra, rb = routes[a], routes[b]
    pa = [depot, *ra]  # pa[i]: the stop before cut i (cut i keeps ra[:i])
    pb = [depot, *rb]
    sa = [*ra, depot]  # sa[i]: the stop after cut i
    sb = [*rb, depot]
    load_a = [0, *itertools.accumulate(demands[v] for v in ra)]
    load_b = [0, *itertools.accumulate(demands[v] for v in rb)]
    total_a, total_b = load_a[-1], load_b[-1]
    candidates: list[tuple[float, Any]] = []
    for i in range(len(ra) + 1):
        x, x2 = pa[i], sa[i]
        old_a = d[x][x2]
        for j in range(len(rb) + 1):
            if (i == 0 and j == 0) or (i == len(ra) and j == len(rb)):
                continue  # the routes trade places
            y, y2 = pb[j], sb[j]
            delta = d[x][y2] + d[y][x2] - old_a - d[y][y2]
            if delta < -eps and (load_a[i] + total_b - load_b[j] <= capacity
                                 and load_b[j] + total_a - load_a[i] <= capacity):
                candidates.append((delta, (i, j)))
    if not candidates:
        return False
    new = _take_first_feasible(
        candidates, lambda m: (ra[:m[0]] + rb[m[1]:], rb[:m[1]] + ra[m[0]:]), sched)
    if new is None:
        return False
    routes[a], routes[b] = list(new[0]), list(new[1])
    return True


def _swap_one(routes: list[list[int]], a: int, b: int, d: Any, depot: int,
              demands: list[int], capacity: int, sched: _Schedules, eps: float) -> bool:
    """The best exchange of one customer of route a with one of route b."""
    ra, rb = routes[a], routes[b]
    load_a = sum(demands[v] for v in ra)
    load_b = sum(demands[v] for v in rb)
    candidates: list[tuple[float, Any]] = []
    for i, x in enumerate(ra):
        xp, xn = (ra[i - 1] if i else depot), (ra[i + 1] if i + 1 < len(ra) else depot)
        out_x = d[xp][x] + d[x][xn]
        for j, y in enumerate(rb):
            if (load_a - demands[x] + demands[y] > capacity
                    or load_b - demands[y] + demands[x] > capacity):
                continue
            yp, yn = (rb[j - 1] if j else depot), (rb[j + 1] if j + 1 < len(rb) else depot)
            delta = (d[xp][y] + d[y][xn] - out_x) + (d[yp][x] + d[x][yn] - d[yp][y] - d[y][yn])
            if delta < -eps:
                candidates.append((delta, (i, j)))
    if not candidates:
        return False
    new = _take_first_feasible(
        candidates, lambda m: ([*ra[:m[0]], rb[m[1]], *ra[m[0] + 1:]],
                               [*rb[:m[1]], ra[m[0]], *rb[m[1] + 1:]]), sched)
    if new is None:
        return False
    routes[a], routes[b] = list(new[0]), list(new[1])
    return True


def _reverse_stretches(route: list[int], d: Any, depot: int, sched: _Schedules, eps: float,
                       deadline: float) -> bool:
    """Reversals of a stretch route[i:j] that save distance and keep the windows (symmetric
    distances: the stretch's own length does not change), best first, until none is left."""
    improved = False
    while time.perf_counter() < deadline:
        path = [depot, *route, depot]
        candidates: list[tuple[float, Any]] = []
        for i in range(1, len(path) - 2):
            for j in range(i + 1, len(path) - 1):
                delta = (d[path[i - 1]][path[j]] + d[path[i]][path[j + 1]]
                         - d[path[i - 1]][path[i]] - d[path[j]][path[j + 1]])
                if delta < -eps:
                    candidates.append((delta, (i - 1, j)))  # route[i-1:j] reversed
        if not candidates:
            break
        new = _take_first_feasible(
            candidates, lambda m: ([*route[:m[0]], *route[m[0]:m[1]][::-1], *route[m[1]:]],),
            sched)
        if new is None:
            break
        route[:] = new[0]
        improved = True
    return improved
