"""Time-window helpers shared by the CVRPTW solvers: integer times for integer-only solvers,
a time-oriented nearest-neighbour construction, and the descents that keep windows
(``relocate_descent``, ``exchange_descent``; the fleet steps are in ``fleet``).

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
        # whole-number times stay whole (at a scale of 10^6/3 a window [1, 1]
        # on float distances held no whole step, and ortools and pyvrp refused it)
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
#: and a float cast above this is not exact (windows of 1e12 on a 0.01-wide map
#: overflowed and were reported as "holding no whole step").
MAX_INTEGER_TIME = 2.0**53


def _snapped(scaled: np.ndarray) -> np.ndarray:
    """Scaled times that float error left a hair off a whole step put back on it, so that
    ceil/floor do not move them a step (2.03 × 1000 = 2029.9999999999998, so a
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


class Schedules:
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


def relocate_descent(instance: CVRPInstance, routes: list[list[int]],
                     deadline: float, sched: Schedules | None = None) -> list[list[int]]:
    """Move single customers to cheaper places that keep capacity and windows (in any route,
    their own included) until no move saves distance or the deadline passes.

    The fleet repair's ejections and shaking leave detours behind (Solomon RC101 from its
    greedy routes: 19.3-20.5k at 15 routes, 17.9-18.2k after this descent, in 0.05-0.2 s);
    the descent takes them out before the reconstruction gets the routes. It never adds a
    route, and a route it empties is dropped. ``sched``: the instance's schedules when the
    caller has them (built once: a dense matrix as lists)."""
    sched = sched if sched is not None else Schedules(instance)
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
    these moves took 0.65% more off in about 0.1 s of Python."""
    routes = [list(r) for r in routes if r]
    if time.perf_counter() >= deadline:
        return routes
    sched = Schedules(instance)
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
                         build: Any, sched: Schedules) -> Any:
    """The cheapest of the ``MAX_WINDOW_CHECKS`` cheapest candidate moves whose new routes
    all keep their windows, or None."""
    candidates.sort(key=lambda c: c[0])
    for _, move in candidates[:MAX_WINDOW_CHECKS]:
        new = build(move)
        if all(sched.ok(r) for r in new):
            return new
    return None


def _exchange_tails(routes: list[list[int]], a: int, b: int, d: Any, depot: int,
                    demands: list[int], capacity: int, sched: Schedules, eps: float) -> bool:
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
              demands: list[int], capacity: int, sched: Schedules, eps: float) -> bool:
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


def _reverse_stretches(route: list[int], d: Any, depot: int, sched: Schedules, eps: float,
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
