"""The CVRP plan as linked routes, and the numba move kernels on it that the granular
descent (``descent``), the kicks (``kicks``, ``penalized``) and the capacity route
elimination (``fleet``) share.

Route r runs from id n + r to id n + count + r (both stand for the depot); every node knows
its route and the running load there, so a relocate, swap or 2-opt* move is checked and made
in O(1) plus the refresh of the routes it touches. Distances are computed on demand from the
coordinates under the instance's convention (or read from its matrix), so no N×N matrix is
built and the moves scale to the largest CVRPs the service takes. Every move keeps the
orientation of the routes (no route is reversed), so asymmetric distances are handled
exactly.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable

import numpy as np
from numba import njit

from solvers.routing.problem import CVRPInstance, nearest_other_points

#: Neighbours per customer in the granular neighbourhood.
NEIGHBOURS = 20


class Plan:
    """Routes as linked lists for the numba kernels: route r runs from id n + r to id
    n + count + r (both stand for the depot), with each node's route and running load."""

    def __init__(self, instance: CVRPInstance, routes: list[list[int]],
                 neighbours: int) -> None:
        n = self.n = instance.n
        self.depot = instance.depot
        self.xy, self.mat, self.conv, self.eps = distance_data(instance)
        self.near = np.ascontiguousarray(instance.nearest_neighbours(min(neighbours, n - 1)),
                                         dtype=np.int64)
        self.demand = np.asarray(instance.demands, dtype=np.int64)
        self.cap = int(instance.capacity)
        self._link(routes)

    def _link(self, routes: list[list[int]]) -> None:
        """The linked lists, routes, positions and loads of ``routes``, one route slot each."""
        n = self.n
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
            refresh(r, self.succ, self.route_of, self.cum, self.load, self.demand, n, count)

    def with_routes(self, routes: list[list[int]]) -> Plan:
        """The same instance's data (neighbour lists, distances: shared, not copied) with
        other routes, as many route slots as ``routes`` has routes."""
        other = copy.copy(self)
        other._link(routes)
        return other

    def region(self, nodes: np.ndarray, routes: list[list[int]]) -> Plan:
        """The plan of a part of this instance: ``nodes`` (the depot first, then customers)
        renumbered 0, 1, ..., with ``routes`` in those numbers and neighbour lists drawn
        among them alone. Coordinate instances only: a matrix is not cut."""
        assert self.conv >= 0, "regions are cut from coordinate instances"
        part = copy.copy(self)
        part.n = int(nodes.size)
        part.depot = 0
        part.xy = np.ascontiguousarray(self.xy[nodes])
        part.demand = np.ascontiguousarray(self.demand[nodes])
        k = min(self.near.shape[1], part.n - 1)
        part.near = np.ascontiguousarray(nearest_other_points(part.xy, k))
        part._link(routes)
        return part

    def slots(self, succ: np.ndarray | None = None) -> list[list[int]]:
        """Every route slot's customers, empty slots included (``routes`` drops them)."""
        succ = self.succ if succ is None else succ
        out: list[list[int]] = []
        for r in range(self.count):
            route: list[int] = []
            v = int(succ[self.n + r])
            while v < self.n:
                route.append(v)
                v = int(succ[v])
            out.append(route)
        return out

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
                c, moves = sweep(c, chunk, self.succ, self.pred, self.route_of, self.cum,
                                  self.load, self.demand, self.cap, self.near, self.xy,
                                  self.mat, self.conv, self.n, self.depot, self.count,
                                  self.eps)
                improved = improved or moves > 0

    def routes(self, succ: np.ndarray | None = None) -> list[list[int]]:
        """The non-empty routes of the plan, or of another successor array of its shape."""
        return [route for route in self.slots(succ) if route]


#: Move evaluations per call into the numba sweep between two looks at the clock (about a
#: millisecond).
_EVALUATIONS_PER_CALL = 20_000
_CONVENTIONS = {"exact": 0, "EUC_2D": 1, "CEIL_2D": 2, "FLOOR_2D": 3, "ATT": 4}


def distance_data(instance: CVRPInstance) -> tuple[np.ndarray, np.ndarray, int, float]:
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
def dist(a: int, b: int, xy: np.ndarray, mat: np.ndarray, conv: int, n: int,
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
def insertion(x: int, c: int, y: int, xy: np.ndarray, mat: np.ndarray, conv: int, n: int,
               depot: int) -> float:
    """What putting c between x and y adds to the plan's length."""
    return (dist(x, c, xy, mat, conv, n, depot) + dist(c, y, xy, mat, conv, n, depot)
            - dist(x, y, xy, mat, conv, n, depot))


@njit(cache=True, nogil=True)
def refresh(r: int, succ: np.ndarray, route_of: np.ndarray, cum: np.ndarray,
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


@njit(cache=True, nogil=True)
def sweep(first: int, customers: int, succ: np.ndarray, pred: np.ndarray,
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
        if improve(c, succ, pred, route_of, cum, load, demand, cap, near, xy, mat, conv, n,
                    depot, count, eps):
            moves += 1
        c += 1
    return c, moves


@njit(cache=True, nogil=True)
def improve(c: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
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
        if (relocate(c, v, succ, pred, route_of, cum, load, demand, cap, xy, mat,
                      conv, n, depot, count, eps)
                or swap(c, v, succ, pred, route_of, cum, load, demand, cap, xy, mat,
                         conv, n, depot, count, eps)
                or two_opt_star(c, v, succ, pred, route_of, cum, load, demand, cap,
                                 xy, mat, conv, n, depot, count, eps)):
            return True
    return False


@njit(cache=True, nogil=True)
def plan_length(succ: np.ndarray, n: int, count: int, xy: np.ndarray, mat: np.ndarray, conv: int,
           depot: int) -> float:
    """The plan's length."""
    total = 0.0
    for r in range(count):
        v = n + r
        while True:
            w = succ[v]
            total += dist(v, w, xy, mat, conv, n, depot)
            if w >= n + count:
                break
            v = w
    return total


#: Passes of the local descent after a kick, over the customers around it.
KICK_PASSES = 20


@njit(cache=True, nogil=True)
def route_length(r: int, succ: np.ndarray, xy: np.ndarray, mat: np.ndarray, conv: int,
                  n: int, depot: int, count: int) -> float:
    """Route r's length, from its start id to its end id."""
    length = 0.0
    v = n + r
    while True:
        w = succ[v]
        length += dist(v, w, xy, mat, conv, n, depot)
        if w >= n + count:
            return length
        v = w


@njit(cache=True, nogil=True)
def save_route(r: int, succ: np.ndarray, n: int, saved: np.ndarray, saved_routes: np.ndarray,
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


# -- the parts of a kick that ``kicks._kicks`` and ``penalized.penalized_kicks`` share ----------


@njit(cache=True, nogil=True)
def pick_ruin(c0: int, ruin: int, removed: np.ndarray, near: np.ndarray,
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


@njit(cache=True, nogil=True)
def neighbourhood(removed: np.ndarray, m: int, near: np.ndarray, listed: np.ndarray,
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


@njit(cache=True, nogil=True)
def save_reachable(around: np.ndarray, a: int, saved: np.ndarray, saved_routes: np.ndarray,
                    seq_start: np.ndarray, seq: np.ndarray, counts: np.ndarray,
                    succ: np.ndarray, route_of: np.ndarray, near: np.ndarray, xy: np.ndarray,
                    mat: np.ndarray, conv: int, n: int, depot: int, count: int) -> float:
    """Save (``save_route``, from none saved) the route of every customer of ``around`` and
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
            save_route(r, succ, n, saved, saved_routes, seq_start, seq, counts)
            before += route_length(r, succ, xy, mat, conv, n, depot, count)
    return before


@njit(cache=True, nogil=True)
def routes_length(routes: np.ndarray, m: int, succ: np.ndarray, xy: np.ndarray,
                   mat: np.ndarray, conv: int, n: int, depot: int, count: int) -> float:
    """The length of the first ``m`` of ``routes``."""
    total = 0.0
    for i in range(m):
        total += route_length(routes[i], succ, xy, mat, conv, n, depot, count)
    return total


@njit(cache=True, nogil=True)
def copy_dirty(dirty: np.ndarray, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
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


@njit(cache=True, nogil=True)
def restore_saved(ns: int, saved_routes: np.ndarray, seq_start: np.ndarray, seq: np.ndarray,
                   succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray, cum: np.ndarray,
                   load: np.ndarray, demand: np.ndarray, n: int, count: int) -> None:
    """Relink the ``ns`` saved routes as ``save_route`` recorded them (a rejected kick)."""
    for i in range(ns):
        r = saved_routes[i]
        prev = n + r
        for j in range(seq_start[i], seq_start[i + 1]):
            succ[prev] = seq[j]
            pred[seq[j]] = prev
            prev = seq[j]
        succ[prev] = n + count + r
        pred[n + count + r] = prev
        refresh(r, succ, route_of, cum, load, demand, n, count)


@njit(cache=True, nogil=True)
def descend_around(around: np.ndarray, a: int, succ: np.ndarray, pred: np.ndarray,
                   route_of: np.ndarray, cum: np.ndarray, load: np.ndarray,
                   demand: np.ndarray, cap: int, near: np.ndarray, xy: np.ndarray,
                   mat: np.ndarray, conv: int, n: int, depot: int, count: int,
                   eps: float, intra: bool = False, runs: bool = False) -> None:
    """Up to ``KICK_PASSES`` first-improvement passes of ``improve`` over the first ``a``
    customers of ``around`` (a kick's customers and their neighbours); with ``intra``, also
    ``two_opt_intra``, and with ``runs`` ``or_opt``, where ``improve`` finds nothing."""
    for _ in range(KICK_PASSES):
        moved = False
        for i in range(a):
            if improve(around[i], succ, pred, route_of, cum, load, demand, cap, near, xy, mat,
                       conv, n, depot, count, eps) or (
                    intra and two_opt_intra(around[i], succ, pred, route_of, cum, load, demand,
                                            near, xy, mat, conv, n, depot, count, eps)) or (
                    runs and or_opt(around[i], succ, pred, route_of, cum, load, demand, cap,
                                      near, xy, mat, conv, n, depot, count, eps)):
                moved = True
        if not moved:
            break


@njit(cache=True, nogil=True)
def two_opt_intra(c: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
                  cum: np.ndarray, load: np.ndarray, demand: np.ndarray, near: np.ndarray,
                  xy: np.ndarray, mat: np.ndarray, conv: int, n: int, depot: int, count: int,
                  eps: float) -> bool:
    """The first 2-opt inside c's route that brings c next to one of its neighbours and
    saves distance: the stretch between them is reversed. Only for symmetric distances
    (coordinates), since a reversed stretch is travelled the other way; the relocate, swap
    and 2-opt* of ``improve`` never reverse, and left routes crossing themselves after a
    recreate."""
    if conv < 0 or c == depot or route_of[c] < 0:
        return False
    r = route_of[c]
    for t in range(near.shape[1]):
        v = near[c, t]
        if v in (depot, c) or route_of[v] != r:
            continue
        for side in range(2):
            # side 0: edges c-v and succ(c)-succ(v) enter; side 1: c-v and pred(c)-pred(v)
            x = succ[c] if side == 0 else pred[c]
            y = succ[v] if side == 0 else pred[v]
            if x == v or y == c:
                continue
            delta = (dist(c, v, xy, mat, conv, n, depot) + dist(x, y, xy, mat, conv, n, depot)
                     - dist(c, x, xy, mat, conv, n, depot)
                     - dist(v, y, xy, mat, conv, n, depot))
            if delta >= -eps:
                continue
            # the stretch to reverse runs from the first of the pair's inner ends to the
            # second: walk from c to learn which of c, v comes first
            w = succ[c]
            while w < n and w != v:
                w = succ[w]
            c_first = w == v
            if side == 0:
                lo, hi = (x, v) if c_first else (y, c)
            else:
                lo, hi = (c, y) if c_first else (v, x)
            _reverse_stretch(lo, hi, succ, pred)
            refresh(r, succ, route_of, cum, load, demand, n, count)
            return True
    return False


@njit(cache=True, nogil=True)
def or_opt(c: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
           cum: np.ndarray, load: np.ndarray, demand: np.ndarray, cap: int,
           near: np.ndarray, xy: np.ndarray, mat: np.ndarray, conv: int, n: int, depot: int,
           count: int, eps: float) -> bool:
    """The first move of the run of 2 or 3 customers from c on into another route, next to
    one of c's neighbours (c first, or last when distances are symmetric), that saves
    distance and keeps the capacity: ``relocate`` moves one customer, and a pair that belongs
    elsewhere together cannot move one at a time without a step uphill."""
    if c == depot or route_of[c] < 0:
        return False
    a = route_of[c]
    p = pred[c]
    last = c
    seg = demand[c]
    for _ in range(2, 4):
        last = succ[last]
        if last >= n:
            return False
        seg += demand[last]
        q = succ[last]
        gain = (dist(p, c, xy, mat, conv, n, depot) + dist(last, q, xy, mat, conv, n, depot)
                - dist(p, q, xy, mat, conv, n, depot))
        inner = 0.0  # the run's own arcs, travelled backwards when it is reversed
        w = c
        while w != last:
            inner += dist(succ[w], w, xy, mat, conv, n, depot) - dist(w, succ[w], xy, mat,
                                                                    conv, n, depot)
            w = succ[w]
        for t in range(near.shape[1]):
            v = near[c, t]
            if v == depot or route_of[v] < 0 or route_of[v] == a:
                continue
            b = route_of[v]
            if load[b] + seg > cap:
                continue
            for side in range(2):
                x = v if side == 0 else pred[v]
                y = succ[v] if side == 0 else v
                base = dist(x, y, xy, mat, conv, n, depot)
                # c next to v: forwards after v (side 0), backwards before v (side 1)
                if side == 0:
                    add = (dist(x, c, xy, mat, conv, n, depot)
                           + dist(last, y, xy, mat, conv, n, depot) - base)
                    rev = False
                else:
                    if conv < 0:
                        continue
                    add = (dist(x, last, xy, mat, conv, n, depot)
                           + dist(c, y, xy, mat, conv, n, depot) - base + inner)
                    rev = True
                if add < gain - eps:
                    succ[p] = q
                    pred[q] = p
                    if not rev:
                        succ[x] = c
                        pred[c] = x
                        succ[last] = y
                        pred[y] = last
                    else:
                        _reverse_stretch(c, last, succ, pred)  # relinks p .. q, undone below
                        succ[p] = q
                        pred[q] = p
                        succ[x] = last
                        pred[last] = x
                        succ[c] = y
                        pred[y] = c
                    refresh(a, succ, route_of, cum, load, demand, n, count)
                    refresh(b, succ, route_of, cum, load, demand, n, count)
                    return True
    return False


@njit(cache=True, nogil=True)
def _reverse_stretch(lo: int, hi: int, succ: np.ndarray, pred: np.ndarray) -> None:
    """Reverse the stretch lo .. hi of a route (lo before hi) in place."""
    before = pred[lo]
    after = succ[hi]
    w = lo
    while True:
        nxt = succ[w]
        succ[w], pred[w] = pred[w], succ[w]
        if w == hi:
            break
        w = nxt
    succ[before] = hi
    pred[hi] = before
    succ[lo] = after
    pred[after] = lo


@njit(cache=True, nogil=True)
def settle(ok: bool, slack: float, total: float, best_total: float, before: float,
           counts: np.ndarray, saved: np.ndarray, saved_routes: np.ndarray,
           seq_start: np.ndarray, seq: np.ndarray, dirty: np.ndarray, succ: np.ndarray,
           pred: np.ndarray, route_of: np.ndarray, cum: np.ndarray, load: np.ndarray,
           s_succ: np.ndarray, s_pred: np.ndarray, s_route_of: np.ndarray, s_cum: np.ndarray,
           s_load: np.ndarray, demand: np.ndarray, xy: np.ndarray, mat: np.ndarray,
           conv: int, n: int, depot: int, count: int,
           eps: float) -> tuple[float, float, bool]:
    """The end of a kick whose saved routes measured ``before`` before it: when ``ok`` (it
    ended feasible) and the plan got shorter, or longer by less than ``slack``, it is kept
    (its routes marked ``dirty``, and copied into the ``s_`` arrays when the plan is the
    shortest met), else the saved routes are relinked. Returns the plan's length, the
    shortest length, and whether the kick was kept."""
    ns = counts[0]
    keep = False
    if ok:
        new_total = total - before + routes_length(saved_routes, ns, succ, xy, mat, conv, n,
                                                   depot, count)
        if new_total < total - eps or (slack > 0 and new_total < total + slack):
            keep = True
            total = new_total
            for i in range(ns):
                dirty[saved_routes[i]] = True
            if total < best_total - eps:
                best_total = total
                copy_dirty(dirty, succ, pred, route_of, cum, load, s_succ, s_pred, s_route_of,
                           s_cum, s_load, n, count)
    if not keep:
        restore_saved(ns, saved_routes, seq_start, seq, succ, pred, route_of, cum, load,
                      demand, n, count)
    for i in range(ns):
        saved[saved_routes[i]] = False
    return total, best_total, keep


@njit(cache=True, nogil=True)
def relocate(c: int, v: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
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
    removal = insertion(p, c, q, xy, mat, conv, n, depot)
    best = removal - eps
    bx = -1
    by = -1
    if v != p:  # after v (v == p is c's own place)
        x = v
        y = succ[v]
        add = insertion(x, c, y, xy, mat, conv, n, depot)
        if add < best:
            best, bx, by = add, x, y
    x = pred[v]
    if x != c:  # before v (v == q is c's own place)
        y = v
        add = insertion(x, c, y, xy, mat, conv, n, depot)
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
    refresh(a, succ, route_of, cum, load, demand, n, count)
    if b != a:
        refresh(b, succ, route_of, cum, load, demand, n, count)
    return True


@njit(cache=True, nogil=True)
def swap(c: int, v: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
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
    if swap_delta(c, v, succ, pred, xy, mat, conv, n, depot) >= -eps:
        return False
    trade_places(c, v, succ, pred)
    refresh(a, succ, route_of, cum, load, demand, n, count)
    refresh(b, succ, route_of, cum, load, demand, n, count)
    return True


@njit(cache=True, nogil=True)
def swap_delta(c: int, v: int, succ: np.ndarray, pred: np.ndarray, xy: np.ndarray,
                mat: np.ndarray, conv: int, n: int, depot: int) -> float:
    """How much longer the plan gets when c and v (of two routes) trade places."""
    p = pred[c]
    q = succ[c]
    vp = pred[v]
    vq = succ[v]
    return (dist(p, v, xy, mat, conv, n, depot) + dist(v, q, xy, mat, conv, n, depot)
            - dist(p, c, xy, mat, conv, n, depot) - dist(c, q, xy, mat, conv, n, depot)
            + dist(vp, c, xy, mat, conv, n, depot) + dist(c, vq, xy, mat, conv, n, depot)
            - dist(vp, v, xy, mat, conv, n, depot) - dist(v, vq, xy, mat, conv, n, depot))


@njit(cache=True, nogil=True)
def trade_places(c: int, v: int, succ: np.ndarray, pred: np.ndarray) -> None:
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


@njit(cache=True, nogil=True)
def two_opt_star(c: int, v: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
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
    delta = two_opt_star_delta(c, v, succ, pred, xy, mat, conv, n, depot)
    if delta >= -eps:
        return False
    cross_tails(c, v, a, b, succ, pred, n, count)
    refresh(a, succ, route_of, cum, load, demand, n, count)
    refresh(b, succ, route_of, cum, load, demand, n, count)
    return True


@njit(cache=True, nogil=True)
def two_opt_star_delta(c: int, v: int, succ: np.ndarray, pred: np.ndarray, xy: np.ndarray,
                        mat: np.ndarray, conv: int, n: int, depot: int) -> float:
    """How much longer the plan gets when c's tail and v's tail (v onwards) trade routes."""
    vp = pred[v]
    q = succ[c]
    return (dist(c, v, xy, mat, conv, n, depot) + dist(vp, q, xy, mat, conv, n, depot)
            - dist(c, q, xy, mat, conv, n, depot) - dist(vp, v, xy, mat, conv, n, depot))


@njit(cache=True, nogil=True)
def cross_tails(c: int, v: int, a: int, b: int, succ: np.ndarray, pred: np.ndarray, n: int,
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


@njit(cache=True, inline="always")
def link(x: int, c: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
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
def unlink(c: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
            load: np.ndarray, demand: np.ndarray) -> None:
    p = pred[c]
    q = succ[c]
    succ[p] = q
    pred[q] = p
    load[route_of[c]] -= demand[c]
    route_of[c] = -1
