"""Ruin-and-recreate kicks that may overload routes on the way, for plans whose routes are
all nearly full (a plain CVRP under a fleet cap with almost no room to spare).

``kicks.cvrp_kicks`` keeps every route within the capacity at every step. Under a cap whose
vehicles hold only a few units more than the demand (X-n101-k25 capped at 25: 5,147 of 5,150
units) almost no removed customer fits anywhere but where it was, so 19 in 20 kicks fail for
want of room and the plan hardly moves. These kicks relax the capacity inside a kick, as
PyVRP and HGS do in their search: the removed customers (a few, ``kicks.PENALIZED_RUIN``)
go to their cheapest places next to a neighbour, overloading at ``penalty`` per unit of
excess load; the descent around them weighs length + penalty × excess; what overload is left
is repaired by relocations and swaps with any route that take excess out (``_repair``, the
bin-packing step of ``fleet.pack_routes`` in miniature); and the kick is kept, by the same annealing
as ``cvrp_kicks``, only if the plan ends feasible. So the plan is always feasible between
kicks and the shortest one met is the answer. ``cvrp_kicks`` raises the penalty while fewer
than ``PENALTY_TARGET[0]`` of the kicks end feasible and lowers it above
``PENALTY_TARGET[1]``.

Letting the plan itself stay overloaded between kicks (penalized acceptance, the best feasible
plan kept) drifted at once to a short plan with 60 units of excess spread over a dozen
routes, which no local move could take out; the X-n101-k25 (cap 25) plan never improved.

The kernels mirror ``kicks._kicks`` and the moves of ``moves`` (the same linked routes and
undo record); they live apart so the kicks of every other plan run the plain code.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.routing.classical.moves import (
    KICK_PASSES,
    cross_tails,
    insertion,
    neighbourhood,
    pick_ruin,
    refresh,
    route_length,
    save_reachable,
    save_route,
    settle,
    swap_delta,
    trade_places,
    two_opt_star_delta,
    unlink,
)


@njit(cache=True, inline="always")
def _excess(load: int, cap: int) -> int:
    """Units a load of ``load`` carries above the capacity."""
    return load - cap if load > cap else 0


@njit(cache=True, nogil=True)
def _p_relocate(c: int, v: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
                cum: np.ndarray, load: np.ndarray, demand: np.ndarray, cap: int,
                penalty: float, xy: np.ndarray, mat: np.ndarray, conv: int, n: int,
                depot: int, count: int, eps: float) -> bool:
    """``moves.relocate`` with the loads' excess priced at ``penalty`` instead of
    forbidden."""
    a = route_of[c]
    b = route_of[v]
    p = pred[c]
    q = succ[c]
    removal = insertion(p, c, q, xy, mat, conv, n, depot)
    if a != b:
        dc = demand[c]
        removal -= penalty * (_excess(load[b] + dc, cap) - _excess(load[b], cap)
                              + _excess(load[a] - dc, cap) - _excess(load[a], cap))
    best = removal - eps
    bx = -1
    by = -1
    if v != p:
        x = v
        y = succ[v]
        add = insertion(x, c, y, xy, mat, conv, n, depot)
        if add < best:
            best, bx, by = add, x, y
    x = pred[v]
    if x != c:
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
def _p_swap(c: int, v: int, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
            cum: np.ndarray, load: np.ndarray, demand: np.ndarray, cap: int, penalty: float,
            xy: np.ndarray, mat: np.ndarray, conv: int, n: int, depot: int, count: int,
            eps: float) -> bool:
    """``moves.swap`` with the loads' excess priced at ``penalty``."""
    a = route_of[c]
    b = route_of[v]
    if a == b:
        return False
    shift = demand[v] - demand[c]
    delta = (swap_delta(c, v, succ, pred, xy, mat, conv, n, depot)
             + penalty * (_excess(load[a] + shift, cap) - _excess(load[a], cap)
                          + _excess(load[b] - shift, cap) - _excess(load[b], cap)))
    if delta >= -eps:
        return False
    trade_places(c, v, succ, pred)
    refresh(a, succ, route_of, cum, load, demand, n, count)
    refresh(b, succ, route_of, cum, load, demand, n, count)
    return True


@njit(cache=True, nogil=True)
def _p_two_opt_star(c: int, v: int, succ: np.ndarray, pred: np.ndarray,
                    route_of: np.ndarray, cum: np.ndarray, load: np.ndarray,
                    demand: np.ndarray, cap: int, penalty: float, xy: np.ndarray,
                    mat: np.ndarray, conv: int, n: int, depot: int, count: int,
                    eps: float) -> bool:
    """``moves.two_opt_star`` with the loads' excess priced at ``penalty``."""
    a = route_of[c]
    b = route_of[v]
    if a == b:
        return False
    vp = pred[v]
    head_a = cum[c]
    head_b = cum[vp]
    delta = (two_opt_star_delta(c, v, succ, pred, xy, mat, conv, n, depot)
             + penalty * (_excess(head_a + load[b] - head_b, cap) - _excess(load[a], cap)
                          + _excess(head_b + load[a] - head_a, cap) - _excess(load[b], cap)))
    if delta >= -eps:
        return False
    cross_tails(c, v, a, b, succ, pred, n, count)
    refresh(a, succ, route_of, cum, load, demand, n, count)
    refresh(b, succ, route_of, cum, load, demand, n, count)
    return True


@njit(cache=True, nogil=True)
def _p_improve(c: int, spare: np.ndarray, succ: np.ndarray, pred: np.ndarray,
               route_of: np.ndarray, cum: np.ndarray, load: np.ndarray, demand: np.ndarray,
               cap: int, penalty: float, near: np.ndarray, xy: np.ndarray, mat: np.ndarray,
               conv: int, n: int, depot: int, count: int, eps: float) -> bool:
    """The first penalized relocate, swap or 2-opt* between c and a neighbour that saves,
    else c alone into the empty route ``spare[0]`` (if any) when that saves: under a cap
    with no room an emptied route is a vehicle the plan cannot do without, and no
    neighbour's move reaches it."""
    if c == depot or route_of[c] < 0:
        return False
    e = spare[0]
    if e >= 0 and route_of[c] != e:
        a = route_of[c]
        dc = demand[c]
        gain = (insertion(pred[c], c, succ[c], xy, mat, conv, n, depot)
                - insertion(n + e, c, n + count + e, xy, mat, conv, n, depot)
                - penalty * (_excess(dc, cap) + _excess(load[a] - dc, cap)
                             - _excess(load[a], cap)))
        if gain > eps and not (pred[c] >= n and succ[c] >= n):
            p = pred[c]
            q = succ[c]
            succ[p] = q
            pred[q] = p
            succ[n + e] = c
            pred[c] = n + e
            succ[c] = n + count + e
            pred[n + count + e] = c
            refresh(a, succ, route_of, cum, load, demand, n, count)
            refresh(e, succ, route_of, cum, load, demand, n, count)
            spare[0] = -1
            return True
    for t in range(near.shape[1]):
        v = near[c, t]
        if v in (depot, c) or route_of[v] < 0:
            continue
        if (_p_relocate(c, v, succ, pred, route_of, cum, load, demand, cap, penalty, xy, mat,
                        conv, n, depot, count, eps)
                or _p_swap(c, v, succ, pred, route_of, cum, load, demand, cap, penalty, xy,
                           mat, conv, n, depot, count, eps)
                or _p_two_opt_star(c, v, succ, pred, route_of, cum, load, demand, cap,
                                   penalty, xy, mat, conv, n, depot, count, eps)):
            return True
    return False


@njit(cache=True, nogil=True)
def _routes_excess(routes: np.ndarray, m: int, load: np.ndarray, cap: int) -> int:
    """The excess load of the first ``m`` of ``routes``."""
    total = 0
    for i in range(m):
        total += _excess(load[routes[i]], cap)
    return total


@njit(cache=True, nogil=True)
def _repair(rpen: float, saved: np.ndarray, saved_routes: np.ndarray, seq_start: np.ndarray,
            seq: np.ndarray, counts: np.ndarray, succ: np.ndarray, pred: np.ndarray,
            route_of: np.ndarray, cum: np.ndarray, load: np.ndarray, demand: np.ndarray,
            cap: int, xy: np.ndarray, mat: np.ndarray, conv: int, n: int, depot: int,
            count: int) -> float:
    """Move customers out of the kick's overloaded routes (all saved) until none is
    overloaded or no move takes excess out: each step relocates a customer of an overloaded
    route to its cheapest place in any route, or swaps it in place with a customer of any
    route, whichever lowers length + ``rpen`` × excess most among those that lower the
    excess. Routes it changes are saved first. Returns the length the saved routes had
    before this call saved more (what the kick's ``before`` must add)."""
    added = 0.0
    while True:
        best = np.inf
        kind = -1
        bc = -1
        bv = -1
        bx = -1
        for i in range(counts[0]):
            a = saved_routes[i]
            if load[a] <= cap:
                continue
            c = succ[n + a]
            while c < n:
                p = pred[c]
                q = succ[c]
                dc = demand[c]
                out = insertion(p, c, q, xy, mat, conv, n, depot)
                for b in range(count):
                    if b == a:
                        continue
                    drop = (_excess(load[a] - dc, cap) - _excess(load[a], cap)
                            + _excess(load[b] + dc, cap) - _excess(load[b], cap))
                    if drop < 0:
                        x = n + b
                        while x < n + count:
                            y = succ[x]
                            key = insertion(x, c, y, xy, mat, conv, n, depot) - out + rpen * drop
                            if key < best:
                                best, kind, bc, bx = key, 0, c, x
                            x = y
                    v = succ[n + b]
                    while v < n:
                        shift = demand[v] - dc
                        drop = (_excess(load[a] + shift, cap) - _excess(load[a], cap)
                                + _excess(load[b] - shift, cap) - _excess(load[b], cap))
                        if drop < 0:
                            key = (swap_delta(c, v, succ, pred, xy, mat, conv, n, depot)
                                   + rpen * drop)
                            if key < best:
                                best, kind, bc, bv = key, 1, c, v
                        v = succ[v]
                c = q
        if kind < 0:
            return added
        a = route_of[bc]
        b = route_of[bx] if kind == 0 else route_of[bv]
        if not saved[b]:
            save_route(b, succ, n, saved, saved_routes, seq_start, seq, counts)
            added += route_length(b, succ, xy, mat, conv, n, depot, count)
        c = bc
        p = pred[c]
        q = succ[c]
        if kind == 0:
            succ[p] = q
            pred[q] = p
            y = succ[bx]
            succ[bx] = c
            pred[c] = bx
            succ[c] = y
            pred[y] = c
        else:
            trade_places(c, bv, succ, pred)
        refresh(a, succ, route_of, cum, load, demand, n, count)
        refresh(b, succ, route_of, cum, load, demand, n, count)


@njit(cache=True, nogil=True)
def penalized_kicks(seeds: np.ndarray, keys: np.ndarray, slack: np.ndarray, ruin: int,
                    length: float, best_length: float, penalty: float, succ: np.ndarray,
                    pred: np.ndarray, route_of: np.ndarray, cum: np.ndarray, load: np.ndarray,
                    s_succ: np.ndarray, s_pred: np.ndarray, s_route_of: np.ndarray,
                    s_cum: np.ndarray, s_load: np.ndarray, dirty: np.ndarray,
                    demand: np.ndarray, cap: int, near: np.ndarray, xy: np.ndarray,
                    mat: np.ndarray, conv: int, n: int, depot: int, count: int,
                    eps: float) -> tuple[float, int, float, int]:
    """One kick per seed customer on a feasible plan (see the module's docstring): remove
    the seed and its nearest customers (``ruin`` in all), put them back at their cheapest
    places at ``penalty`` per unit of excess load, descend around them at that penalty,
    repair what excess is left at ten times it, and keep the kick when the plan is feasible
    and shorter, or longer by less than the kick's ``slack``; else restore it. The shortest
    plan met is kept in the ``s_`` arrays (``dirty`` as in ``kicks._kicks``). Returns the
    plan's length, the kicks kept, the shortest length, and the kicks that ended feasible."""
    kept = 0
    feasible = 0
    k = near.shape[1]
    removed = np.empty(ruin, dtype=np.int64)
    around = np.empty(ruin * (k + 1), dtype=np.int64)
    listed = np.zeros(n, dtype=np.bool_)
    saved = np.zeros(count, dtype=np.bool_)
    saved_routes = np.empty(count, dtype=np.int64)
    seq_start = np.empty(count + 1, dtype=np.int64)
    seq = np.empty(n, dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    spare = np.full(1, -1, dtype=np.int64)
    for s in range(seeds.shape[0]):
        m = pick_ruin(seeds[s], ruin, removed, near, route_of, depot)
        a = neighbourhood(removed, m, near, listed, around)
        # save every route a move of this kick can reach, before anything moves
        before = save_reachable(around, a, saved, saved_routes, seq_start, seq, counts, succ,
                                 route_of, near, xy, mat, conv, n, depot, count)
        # an empty route, saved, for a customer that is better alone than overloading
        spare[0] = -1
        for r in range(count):
            if succ[n + r] >= n:
                spare[0] = r
                if not saved[r]:
                    save_route(r, succ, n, saved, saved_routes, seq_start, seq, counts)
                break
        for i in range(m):
            unlink(removed[i], succ, pred, route_of, load, demand)
        for i in range(counts[0]):
            refresh(saved_routes[i], succ, route_of, cum, load, demand, n, count)
        order = np.argsort(keys[s, :m], kind="mergesort")
        before = _p_recreate(removed, order, m, before, penalty, spare, saved, saved_routes,
                             seq_start, seq, counts, succ, pred, route_of, cum, load, demand,
                             cap, near, xy, mat, conv, n, depot, count)
        weight = penalty
        for attempt in range(2):
            if attempt == 1:
                if _routes_excess(saved_routes, counts[0], load, cap) == 0:
                    break
                # the overload the descent left: repaired, then descended at a higher price
                weight = 10.0 * penalty
                before += _repair(weight, saved, saved_routes, seq_start, seq, counts, succ,
                                  pred, route_of, cum, load, demand, cap, xy, mat, conv, n,
                                  depot, count)
                if _routes_excess(saved_routes, counts[0], load, cap) > 0:
                    break
            for _ in range(KICK_PASSES):
                moved = False
                for i in range(a):
                    if _p_improve(around[i], spare, succ, pred, route_of, cum, load, demand,
                                  cap, weight, near, xy, mat, conv, n, depot, count, eps):
                        moved = True
                if not moved:
                    break
        ok = _routes_excess(saved_routes, counts[0], load, cap) == 0
        if ok:
            feasible += 1
        length, best_length, keep = settle(ok, slack[s], length, best_length, before, counts,
                                           saved, saved_routes, seq_start, seq, dirty, succ,
                                           pred, route_of, cum, load, s_succ, s_pred,
                                           s_route_of, s_cum, s_load, demand, xy, mat, conv,
                                           n, depot, count, eps)
        if keep:
            kept += 1
    return length, kept, best_length, feasible


@njit(cache=True, nogil=True)
def _p_recreate(removed: np.ndarray, order: np.ndarray, m: int, before: float, penalty: float,
                spare: np.ndarray, saved: np.ndarray, saved_routes: np.ndarray,
                seq_start: np.ndarray, seq: np.ndarray, counts: np.ndarray, succ: np.ndarray,
                pred: np.ndarray, route_of: np.ndarray, cum: np.ndarray, load: np.ndarray,
                demand: np.ndarray, cap: int, near: np.ndarray, xy: np.ndarray,
                mat: np.ndarray, conv: int, n: int, depot: int, count: int) -> float:
    """The ``m`` removed customers back, in ``order``, each at its cheapest place next to a
    neighbour at ``penalty`` per unit of excess load, or alone in the empty route
    ``spare[0]``; a route a customer goes to that was not saved is saved first and its
    length added to ``before``, which is returned."""
    k = near.shape[1]
    for i in range(m):
        c = removed[order[i]]
        dc = demand[c]
        best = np.inf
        bx = -1
        by = -1
        for t in range(k):
            v = near[c, t]
            if v == depot or route_of[v] < 0:
                continue
            r = route_of[v]
            extra = penalty * (_excess(load[r] + dc, cap) - _excess(load[r], cap))
            for side in range(2):
                x = v if side == 0 else pred[v]
                y = succ[v] if side == 0 else v
                add = insertion(x, c, y, xy, mat, conv, n, depot) + extra
                if add < best:
                    best, bx, by = add, x, y
        e = spare[0]
        if e >= 0:
            add = (insertion(n + e, c, n + count + e, xy, mat, conv, n, depot)
                   + penalty * _excess(dc, cap))
            if add < best:
                best, bx, by = add, n + e, n + count + e
                spare[0] = -1
        if bx < 0:  # every neighbour was removed too: the cheapest route start
            for r in range(count):
                x = n + r
                y = succ[x]
                add = (insertion(x, c, y, xy, mat, conv, n, depot)
                       + penalty * (_excess(load[r] + dc, cap) - _excess(load[r], cap)))
                if add < best:
                    best, bx, by = add, x, y
        r = route_of[bx]
        if not saved[r]:
            save_route(r, succ, n, saved, saved_routes, seq_start, seq, counts)
            before += route_length(r, succ, xy, mat, conv, n, depot, count)
        succ[bx] = c
        pred[c] = bx
        succ[c] = by
        pred[by] = c
        refresh(r, succ, route_of, cum, load, demand, n, count)
    return before
