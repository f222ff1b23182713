"""Slack-induced string removals and blink insertion for the CVRP kicks (``kicks._kicks``
with ``STRING_RUIN``), after Christiaens and Vanden Berghe's SISR.

The plain kick removes a customer and its nearest neighbours: a round blob whose customers
mostly go back where they were, since each route keeps the same neighbours around the hole.
A string removal instead cuts a few consecutive customers out of each of several routes met
near the seed, so the routes' ends and middles near the seed are all open at once and the
recreate can reshape which route serves which stretch. Customers go back sorted (randomly,
by demand, or by distance from the depot, as SISR draws it), each at the cheapest place
next to a neighbour, but every place is skipped with a small probability (a "blink"), so
equal plans differ and the search does not keep rebuilding the same routes.

Everything stays granular (neighbour lists only): the strings come from routes of the
seed's neighbours, and the places tried are next to a customer's neighbours.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.routing.classical.moves import insertion, refresh, route_length, save_route

#: Mean customers a string kick removes (SISR's c-bar) and the longest string.
MEAN_REMOVED = 10
MAX_STRING = 10
#: Probability that the recreate skips a place it looks at (SISR's blink rate).
BLINK = 0.01
#: Chance of the split-string removal (a string with a short run kept inside it).
SPLIT = 0.5


@njit(cache=True, nogil=True)
def seed_strings(seed: int) -> None:
    """Seed numba's generator, which the string kicks draw from (one per thread)."""
    np.random.seed(seed)


@njit(cache=True, nogil=True)
def _route_size(r: int, succ: np.ndarray, n: int) -> int:
    size = 0
    v = succ[n + r]
    while v < n:
        size += 1
        v = succ[v]
    return size


@njit(cache=True, nogil=True)
def string_ruin(c0: int, mean: int, lmax: float, removed: np.ndarray, near: np.ndarray,
                succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray, n: int,
                depot: int, count: int, hit: np.ndarray) -> int:
    """Strings of consecutive customers, one from each of up to k_s routes met in the order
    of ``c0``'s neighbour list (``c0`` first), into ``removed`` (nothing is unlinked);
    ``lmax`` is the longest string (SISR's l_s_max: ``MAX_STRING`` or the mean route size).
    ``hit`` (per route, all false before and after) marks the routes already cut. Returns
    how many customers were chosen."""
    ks_max = 4.0 * mean / (1.0 + lmax) - 1.0
    ks = int(np.random.random() * ks_max) + 1
    m = 0
    cap = removed.shape[0]
    routes = 0
    touched = np.empty(ks, dtype=np.int64)
    for t in range(-1, near.shape[1]):
        if routes >= ks:
            break
        v = c0 if t < 0 else near[c0, t]
        if v == depot or route_of[v] < 0 or hit[route_of[v]]:
            continue
        r = route_of[v]
        hit[r] = True
        touched[routes] = r
        routes += 1
        size = _route_size(r, succ, n)
        top = min(float(size), lmax)
        length = int(np.random.random() * top) + 1
        keep = 0
        if length < size and np.random.random() < SPLIT:
            keep = 1  # the split string: one more cut, a run of one kept inside
            while length + keep < size and np.random.random() < 0.01:
                keep += 1
        span = length + keep
        # the string holds v at a random place: walk back, then forward
        start = v
        back = int(np.random.random() * span)
        while back > 0 and pred[start] < n:
            start = pred[start]
            back -= 1
        first_kept = int(np.random.random() * (length + 1)) if keep else -1
        w = start
        i = 0
        while i < span and w < n:
            nxt = succ[w]
            if not (keep and first_kept <= i < first_kept + keep) and m < cap:
                removed[m] = w
                m += 1
            i += 1
            w = nxt
    for i in range(routes):
        hit[touched[i]] = False
    return m


@njit(cache=True, nogil=True)
def route_ruin(c0: int, removed: np.ndarray, near: np.ndarray, succ: np.ndarray,
               route_of: np.ndarray, load: np.ndarray, n: int, depot: int,
               most: int) -> int:
    """Every customer of the least loaded route among those of ``c0`` and its neighbours,
    into ``removed`` (nothing is unlinked), for a kick that tries to do without that route;
    0 when the route holds more than ``most`` customers."""
    best_r = -1
    best_load = np.inf
    for t in range(-1, near.shape[1]):
        v = c0 if t < 0 else near[c0, t]
        if v == depot or route_of[v] < 0:
            continue
        r = route_of[v]
        if load[r] < best_load:
            best_load = load[r]
            best_r = r
    if best_r < 0 or _route_size(best_r, succ, n) > min(most, removed.shape[0]):
        return 0
    m = 0
    v = succ[n + best_r]
    while v < n:
        removed[m] = v
        m += 1
        v = succ[v]
    return m


@njit(cache=True, nogil=True)
def insertion_order(removed: np.ndarray, m: int, demand: np.ndarray, xy: np.ndarray,
                    mat: np.ndarray, conv: int, n: int, depot: int) -> np.ndarray:
    """SISR's orders for the recreate, drawn with weights 4 / 4 / 2 / 1: random, largest
    demand first, farthest from the depot first, closest first."""
    key = np.empty(m)
    pick = np.random.random() * 11.0
    for i in range(m):
        c = removed[i]
        if pick < 4.0:
            key[i] = np.random.random()
        elif pick < 8.0:
            key[i] = -demand[c] + 0.5 * np.random.random()
        else:
            if conv < 0:
                d = mat[depot, c]
            else:
                d = np.hypot(xy[c, 0] - xy[depot, 0], xy[c, 1] - xy[depot, 1])
            key[i] = -d if pick < 10.0 else d
    return np.argsort(key, kind="mergesort")


@njit(cache=True, nogil=True)
def blink_recreate(removed: np.ndarray, order: np.ndarray, m: int, before: float,
                   saved: np.ndarray, saved_routes: np.ndarray, seq_start: np.ndarray,
                   seq: np.ndarray, counts: np.ndarray, succ: np.ndarray, pred: np.ndarray,
                   route_of: np.ndarray, cum: np.ndarray, load: np.ndarray,
                   demand: np.ndarray, cap: int, near: np.ndarray, xy: np.ndarray,
                   mat: np.ndarray, conv: int, n: int, depot: int,
                   count: int) -> tuple[bool, float]:
    """``kicks._recreate`` with blinks: each place next to a neighbour is skipped with
    probability ``BLINK``; a customer none of whose neighbours' routes has room goes to the
    start of the route with room where it adds least. Returns whether every customer found a
    place, and ``before`` (with the length of any route it fell back to, saved first)."""
    k = near.shape[1]
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
                if np.random.random() < BLINK:
                    continue
                x = v if side == 0 else pred[v]
                y = succ[v] if side == 0 else v
                add = insertion(x, c, y, xy, mat, conv, n, depot)
                if add < best:
                    best, bx, by = add, x, y
        if bx < 0:
            for r in range(count):
                if load[r] + demand[c] > cap:
                    continue
                x = n + r
                y = succ[x]
                add = insertion(x, c, y, xy, mat, conv, n, depot)
                if add < best:
                    best, bx, by = add, x, y
        if bx < 0:
            return False, before
        r = route_of[bx]
        if not saved[r]:
            save_route(r, succ, n, saved, saved_routes, seq_start, seq, counts)
            before += route_length(r, succ, xy, mat, conv, n, depot, count)
        succ[bx] = c
        pred[c] = bx
        succ[c] = by
        pred[by] = c
        refresh(r, succ, route_of, cum, load, demand, n, count)
    return True, before
