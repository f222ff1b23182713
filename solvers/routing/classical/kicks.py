"""Ruin-and-recreate kicks on a CVRP plan (``cvrp_kicks``): the search that ``ils`` and
``sil_ls`` run after their start, where ``descent.cvrp_descent`` stops at the first local
optimum. A kick removes strings of customers from the routes near a seed customer
(``strings``, SISR's removals; before, the seed and its nearest neighbours), puts them back
at their cheapest places with blinks, descends around them with the granular moves
(``moves``, and 2-opt inside a route) and keeps the result by an annealing threshold: a
localized ruin-and-recreate inside simulated annealing, as FILO runs it. Under a fleet cap
with almost no room the kicks turn to ``penalized.penalized_kicks``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

from solvers.contract import beating
from solvers.routing.classical.moves import (
    NEIGHBOURS,
    Plan,
    descend_around,
    insertion,
    neighbourhood,
    pick_ruin,
    plan_length,
    refresh,
    route_length,
    save_reachable,
    save_route,
    settle,
    unlink,
)
from solvers.routing.classical.parallel import run_threads
from solvers.routing.classical.penalized import penalized_kicks
from solvers.routing.classical.queue_descent import first_descent
from solvers.routing.classical.regions import regions_for, run_regions
from solvers.routing.classical.strings import (
    MAX_STRING,
    MEAN_REMOVED,
    blink_recreate,
    insertion_order,
    route_ruin,
    seed_strings,
    string_ruin,
)
from solvers.routing.problem import CVRPInstance

#: The kicks' annealing temperature at the start and at the end of a run, in units of the
#: plan's mean arc: a kick that lengthens the plan by d is kept with probability exp(−d / T).
#: Measured (30 s from the ils start, seed 0) against keeping only shorter plans:
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
#: Whether the plain kicks remove strings from several routes (``strings``, SISR's ruin and
#: blink recreate) rather than a customer and its nearest neighbours, and whether the descent
#: after a kick also tries 2-opt inside a route (``moves.two_opt_intra``). Paired runs at
#: 10 s on ten Set X instances of 139-856 customers (seeds 0 and 1, machine shared, load
#: 8-15 on 2 cores): mean gap 1.96% / 1.76% with the nearest-neighbour ruin, 1.56% / 1.35%
#: with both (better on 15 of 20 pairs); the strings alone 1.40% / 1.82%.
STRING_RUIN = True
INTRA_TWO_OPT = True
#: Whether the descent after a kick also moves runs of 2 and 3 customers (``moves.or_opt``).
#: Off: paired 10 s runs on seven of the instances above (seeds 2 and 3, machine shared)
#: gave 1.48% against 1.41% without, worse on 8 of 13 pairs (fewer kicks in the time).
OR_OPT = False
#: Chance that a string kick (``cvrp_kicks(route_kicks=...)``; ``ils`` with two or more
#: searches) removes a whole route instead: the least loaded route near the seed, if it holds
#: at most ``ROUTE_KICK_MOST`` customers (``strings.route_ruin``). Strings alone seldom empty
#: a route (``lmax`` customers at most) and the recreate puts customers next to their
#: neighbours, so on X-n936-k151 (6 customers a route) the searches settled a few routes
#: above the best-known however few they started from. Longer routes are left to the
#: strings: removing them whole made X-n783-k48 (16 a route) worse.
ROUTE_KICK = 0.1
ROUTE_KICK_MOST = MAX_STRING
RUIN_WINDOW = 500
#: Fewest customers for which ``cvrp_kicks`` runs several searches when asked to: below it a
#: kick takes microseconds and one search finds the optimum alone.
MIN_THREADED = 20
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


def cvrp_kicks(instance: CVRPInstance, routes: list[list[int]], deadline: float, seed: int,
               neighbours: int = NEIGHBOURS, ruin: int = 20,
               on_slice: Callable[[float, int], None] | None = None,
               slice_seconds: float = 1.0,
               cancelled: Callable[[], bool] | None = None,
               temperature: tuple[float, float] = KICK_TEMPERATURE,
               on_descent: Callable[[float], None] | None = None,
               threads: int = 1,
               fewer_routes: Callable[[list[list[int]]], list[list[int]] | None] | None = None,
               route_kicks: float = 0.0) -> tuple[list[list[int]], int]:
    """``descent.cvrp_descent``, then kicks until ``deadline``: remove strings of customers
    from routes near a random customer (``STRING_RUIN``; else the customer and its ``ruin``
    − 1 nearest neighbours), put each back at its cheapest place next to a neighbour (any
    route with room if none), run the descent over the customers around them, and keep the
    result if the plan got shorter, or longer by less than an annealing threshold
    (``temperature``, cooling from its first to its second value over the time to
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
    ``PENALIZED_RUIN``).

    ``threads`` > 1 runs that many searches at once, one per thread: on a large plan (at
    least ``regions.REGION_CUSTOMERS`` customers a thread, coordinates) each on its own
    region of the plan, cut anew every few seconds (``regions.run_regions``); else each on
    the whole plan, exchanging the best (``parallel.run_threads``). The kicks kept are
    summed over them. ``fewer_routes``,
    if given, turns the plan after the first descent into one of fewer routes (or None), for
    the second search to start from. ``route_kicks``: the chance that a string kick removes
    a whole short route instead (see ``ROUTE_KICK``)."""
    routes = [list(r) for r in routes if r]
    if len(routes) == 0 or instance.n < 3 or time.perf_counter() >= deadline:
        return routes, 0
    plan = Plan(instance, routes, neighbours)
    _first_descent(instance, routes, plan, deadline, cancelled, on_slice, on_descent,
                   slice_seconds)
    customers = np.array([c for c in range(instance.n) if c != instance.depot], dtype=np.int64)
    start = time.perf_counter()
    # SISR's longest string: MAX_STRING, or the mean route's size if that is shorter
    lmax = float(min(MAX_STRING, max(1.0, len(customers) / max(1, len(routes)))))
    search = _Search(plan, customers, np.random.default_rng(seed), ruin, lmax, temperature,
                     start, max(deadline - start, 1e-9), route_kicks)
    if STRING_RUIN:
        seed_strings(seed)
    regions = regions_for(len(customers), threads) if plan.conv >= 0 else 1
    if regions > 1:
        return run_regions(search, regions, seed, deadline, slice_seconds, on_slice,
                           cancelled)
    if threads > 1 and len(customers) >= MIN_THREADED:
        best, kept = run_threads(search, threads, seed, deadline, slice_seconds, on_slice,
                                 cancelled, fewer_routes)
    else:
        best = _run_one(search, deadline, slice_seconds, on_slice, cancelled)
        kept = best.kept
    return best.finish(), kept


def _run_one(search: _Search, deadline: float, slice_seconds: float,
             on_slice: Callable[[float, int], None] | None,
             cancelled: Callable[[], bool] | None) -> _Search:
    """Kicks on one thread until ``deadline`` or a cancel, reporting every slice."""
    next_report = search.start + slice_seconds
    first = True  # one kick even past the deadline: a warm-up must compile the kernel
    while (now := time.perf_counter()) < deadline or first:
        first = False
        if now >= next_report:
            if on_slice is not None:
                on_slice(search.best_total, search.kept)
            if cancelled is not None and cancelled():
                break
            next_report = now + slice_seconds
        search.step(now)
    return search


class _Search:
    """One annealed kick search over its own copy of the plan's arrays: the current plan,
    the shortest met (``best``, with ``dirty`` routes changed since it was copied), its
    length and the capacity mode. The neighbour lists and distances are shared, read-only,
    between the searches of ``parallel.run_threads``."""

    def __init__(self, plan: Plan, customers: np.ndarray, rng: np.random.Generator,
                 ruin: int, lmax: float, temperature: tuple[float, float], start: float,
                 span: float, route_kicks: float = 0.0) -> None:
        self.plan = plan
        self.customers = customers
        self.rng = rng
        self.ruin = ruin
        self.lmax = lmax
        self.temperature = temperature
        self.start = start
        self.span = span
        self.route_kicks = route_kicks if STRING_RUIN else 0.0
        self.arrays = (plan.succ, plan.pred, plan.route_of, plan.cum, plan.load)
        self.best = [a.copy() for a in self.arrays]
        self.dirty = np.zeros(plan.count, dtype=np.bool_)
        self.total = plan_length(plan.succ, plan.n, plan.count, plan.xy, plan.mat, plan.conv,
                                 plan.depot)
        self.best_total = self.total
        # the temperature, in units of the plan's mean arc, cools geometrically over the
        # kicks' time from temperature[0] to temperature[1]
        self.arc = self.total / max(1, len(customers) + plan.count)
        self.mode = _Capacity(size=min(ruin, plan.near.shape[1] + 1))
        if STRING_RUIN:
            self.mode.size = 4 * MEAN_REMOVED + 8
        self.kept = 0
        self.tried = 0
        self.batch = 1  # kicks per call, grown to about 5 ms of work between clock looks

    def twin(self, rng: np.random.Generator, routes: list[list[int]] | None = None,
             arrays: tuple[np.ndarray, ...] | None = None) -> _Search:
        """A search with its own arrays and draws, from ``routes`` (as many route slots as
        it has routes), else from ``arrays`` (a copy of this plan's, taken while nothing
        kicked it: ``run_threads`` makes twins while this search kicks), else this plan."""
        if routes is None:
            plan = copy.copy(self.plan)
            plan.succ, plan.pred, plan.route_of, plan.cum, plan.load = (
                a.copy() for a in (self.arrays if arrays is None else arrays))
        else:
            plan = self.plan.with_routes(routes)
        return _Search(plan, self.customers, rng, self.ruin, self.lmax, self.temperature,
                       self.start, self.span, self.route_kicks)

    def on_region(self, plan: Plan, rng: np.random.Generator) -> _Search:
        """A search of ``plan``, a region of this one's (``regions``), with its own draws,
        on this search's schedule and settings; the capacity mode carries over."""
        search = _Search(plan, np.arange(1, plan.n, dtype=np.int64), rng, self.ruin,
                         self.lmax, self.temperature, self.start, self.span, self.route_kicks)
        search.mode = copy.copy(self.mode)
        return search

    def step(self, now: float) -> None:
        """One batch of kicks."""
        plan, rng, batch, mode = self.plan, self.rng, self.batch, self.mode
        seeds = self.customers[rng.integers(0, len(self.customers), batch)]
        keys = rng.random((batch, self.ruin))  # the order the removed customers go back in
        slack = _slack(rng, batch, self.arc, self.temperature,
                       min(1.0, (now - self.start) / self.span))
        if mode.penalty > 0:
            self.total, k, self.best_total, fine = penalized_kicks(
                seeds, keys, slack, mode.size, self.total, self.best_total, mode.penalty,
                *self.arrays, *self.best, self.dirty, plan.demand, plan.cap, plan.near,
                plan.xy, plan.mat, plan.conv, plan.n, plan.depot, plan.count, plan.eps)
            mode.after_penalized(batch, fine)
        else:
            self.total, k, self.best_total, failed = _kicks(
                seeds, keys, slack, mode.size, self.total, self.best_total, *self.arrays,
                *self.best, self.dirty, plan.demand, plan.cap, plan.near, plan.xy, plan.mat,
                plan.conv, plan.n, plan.depot, plan.count, plan.eps, STRING_RUIN,
                MEAN_REMOVED, self.lmax if STRING_RUIN else 1.0, INTRA_TWO_OPT, OR_OPT,
                self.route_kicks, ROUTE_KICK_MOST)
            mode.after_plain(batch, failed, self.total, plan.demand)
        self.kept += k
        self.tried += batch
        per_kick = (time.perf_counter() - now) / batch
        self.batch = max(1, min(2 * batch, int(0.005 / max(per_kick, 1e-7))))

    def adopt(self, other: _Search) -> None:
        """Continue from ``other``'s shortest plan, as current and as shortest. A plan of
        another number of route slots is rebuilt into this search's slots (empty ones to
        spare), or into its own number of routes when that is more."""
        if other.plan.count != self.plan.count:
            routes = other.plan.routes(other.best[0])
            routes += [[] for _ in range(self.plan.count - len(routes))]
            self.plan = self.plan.with_routes(routes)
            plan = self.plan
            self.arrays = (plan.succ, plan.pred, plan.route_of, plan.cum, plan.load)
            self.best = [a.copy() for a in self.arrays]
            self.dirty = np.zeros(plan.count, dtype=np.bool_)
        else:
            for mine, theirs in zip(self.arrays, other.best, strict=True):
                mine[:] = theirs
            for mine, theirs in zip(self.best, other.best, strict=True):
                mine[:] = theirs
            self.dirty[:] = False
        self.total = self.best_total = other.best_total

    def best_routes(self) -> int:
        """Routes the shortest plan met uses."""
        plan = self.plan
        return int(np.count_nonzero(self.best[0][plan.n:plan.n + plan.count] < plan.n))

    def finish(self) -> list[list[int]]:
        """The shortest plan met, as routes."""
        if self.best_total < self.total:
            for a, b in zip(self.arrays, self.best, strict=True):
                a[:] = b
        return self.plan.routes()


def _first_descent(instance: CVRPInstance, routes: list[list[int]], plan: Plan,
                   deadline: float, cancelled: Callable[[], bool] | None,
                   on_slice: Callable[[float, int], None] | None,
                   on_descent: Callable[[float], None] | None, slice_seconds: float) -> None:
    """``cvrp_kicks``'s first descent to a local optimum; ``on_descent`` (else ``on_slice``)
    hears the starting length every ``slice_seconds`` meanwhile, since at 100K nodes it runs
    about 15 s."""
    if on_descent is None and on_slice is not None:
        on_descent = lambda length: on_slice(length, 0)  # noqa: E731
    if on_descent is None:
        first_descent(plan, deadline, cancelled)
    else:
        start_length = instance.cost(routes)
        first_descent(plan, deadline, beating(cancelled, lambda: on_descent(start_length),
                                              slice_seconds))


def _slack(rng: np.random.Generator, batch: int, arc: float,
           temperature: tuple[float, float], frac: float) -> np.ndarray:
    """How much longer each of a batch of kicks may make the plan and still be kept: an
    exponential draw at the temperature ``frac`` of the way from ``temperature[0]`` to
    ``temperature[1]`` (in units of the mean arc ``arc``); zeros when the first is 0."""
    t_start, t_end = temperature
    if t_start > 0:
        heat = arc * t_start * (t_end / t_start) ** frac
        return -heat * np.log(1.0 - rng.random(batch))
    return np.zeros(batch)


@dataclass
class _Capacity:
    """How ``cvrp_kicks`` treats the capacity: kicks that keep it (``penalty`` 0) removing
    ``size`` customers, until 19 in 20 kicks of a window of ``RUIN_WINDOW`` give up for want
    of room; from then on penalized kicks at an adapted ``penalty`` (see ``PENALIZED_RUIN``).
    ``tried``, ``gave_up`` and ``feasible`` count the current window."""

    size: int
    penalty: float = 0.0
    tried: int = 0
    gave_up: int = 0
    feasible: int = 0

    def after_plain(self, batch: int, failed: int, total: float, demand: np.ndarray) -> None:
        self.tried += batch
        self.gave_up += failed
        if self.tried >= RUIN_WINDOW:
            if self.gave_up * 20 > self.tried * 19:
                # the routes are too full to take customers back: relax the capacity inside
                # the kicks
                self.size = min(PENALIZED_RUIN, self.size)
                self.penalty = PENALTY_START * total / max(1.0, float(demand.sum()))
            self.tried = self.gave_up = 0

    def after_penalized(self, batch: int, feasible: int) -> None:
        self.tried += batch
        self.feasible += feasible
        if self.tried >= PENALTY_WINDOW:
            if self.feasible < PENALTY_TARGET[0] * self.tried:
                self.penalty *= PENALTY_STEP[0]
            elif self.feasible > PENALTY_TARGET[1] * self.tried:
                self.penalty *= PENALTY_STEP[1]
            self.tried = self.feasible = 0


@njit(cache=True, nogil=True)
def _kicks(seeds: np.ndarray, keys: np.ndarray, slack: np.ndarray, ruin: int, total: float,
           best_total: float, succ: np.ndarray, pred: np.ndarray, route_of: np.ndarray,
           cum: np.ndarray, load: np.ndarray, s_succ: np.ndarray, s_pred: np.ndarray,
           s_route_of: np.ndarray, s_cum: np.ndarray, s_load: np.ndarray,
           dirty: np.ndarray, demand: np.ndarray, cap: int, near: np.ndarray, xy: np.ndarray,
           mat: np.ndarray, conv: int, n: int, depot: int, count: int,
           eps: float, strings: bool = False, mean: int = 10,
           lmax: float = 10.0, intra: bool = False,
           runs: bool = False, whole: float = 0.0,
           most: int = 0) -> tuple[float, int, float, int]:
    """One kick per seed customer (see ``cvrp_kicks``): kept when the plan gets shorter, or
    longer by less than the kick's ``slack``; the shortest plan met is kept in the ``s_``
    arrays. Returns the plan's length, the kicks kept, the shortest length and the kicks
    given up because a removed customer found no route with room. With ``strings``, a kick
    removes the whole route ``route_ruin`` picks instead with probability ``whole`` (routes of
    at most ``most`` customers).

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
    hit = np.zeros(count, dtype=np.bool_)
    for s in range(seeds.shape[0]):
        m = 0
        if strings and whole > 0 and np.random.random() < whole:
            m = route_ruin(seeds[s], removed, near, succ, route_of, load, n, depot, most)
        if strings and m == 0:
            m = string_ruin(seeds[s], mean, lmax, removed, near, succ, pred, route_of, n,
                            depot, count, hit)
        elif not strings:
            m = pick_ruin(seeds[s], ruin, removed, near, route_of, depot)
        a = neighbourhood(removed, m, near, listed, around)
        # save every route a move of this kick can reach, before anything moves
        before = save_reachable(around, a, saved, saved_routes, seq_start, seq, counts, succ,
                                route_of, near, xy, mat, conv, n, depot, count)
        ns = counts[0]
        for i in range(m):
            unlink(removed[i], succ, pred, route_of, load, demand)
        for i in range(ns):
            refresh(saved_routes[i], succ, route_of, cum, load, demand, n, count)
        if strings:
            order = insertion_order(removed, m, demand, xy, mat, conv, n, depot)
            ok, before = blink_recreate(removed, order, m, before, saved, saved_routes,
                                        seq_start, seq, counts, succ, pred, route_of, cum,
                                        load, demand, cap, near, xy, mat, conv, n, depot,
                                        count)
        else:
            order = np.argsort(keys[s, :m], kind="mergesort")
            ok, before = _recreate(removed, order, m, before, saved, saved_routes, seq_start,
                                   seq, counts, succ, pred, route_of, cum, load, demand, cap,
                                   near, xy, mat, conv, n, depot, count)
        if ok:
            descend_around(around, a, succ, pred, route_of, cum, load, demand, cap, near, xy,
                           mat, conv, n, depot, count, eps, intra, runs)
        else:
            failed += 1
        total, best_total, keep = settle(ok, slack[s], total, best_total, before, counts,
                                         saved, saved_routes, seq_start, seq, dirty, succ,
                                         pred, route_of, cum, load, s_succ, s_pred,
                                         s_route_of, s_cum, s_load, demand, xy, mat, conv, n,
                                         depot, count, eps)
        if keep:
            kept += 1
    return total, kept, best_total, failed


@njit(cache=True, nogil=True)
def _recreate(removed: np.ndarray, order: np.ndarray, m: int, before: float,
              saved: np.ndarray, saved_routes: np.ndarray, seq_start: np.ndarray,
              seq: np.ndarray, counts: np.ndarray, succ: np.ndarray, pred: np.ndarray,
              route_of: np.ndarray, cum: np.ndarray, load: np.ndarray, demand: np.ndarray,
              cap: int, near: np.ndarray, xy: np.ndarray, mat: np.ndarray, conv: int, n: int,
              depot: int, count: int) -> tuple[bool, float]:
    """The ``m`` removed customers back, in ``order``, each at its cheapest place next to a
    neighbour in a route with room, else at the start of any route with room; a route it
    falls back to is saved first and its length added to ``before``. Returns whether every
    customer found a place, and ``before``."""
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
                x = v if side == 0 else pred[v]
                y = succ[v] if side == 0 else v
                add = insertion(x, c, y, xy, mat, conv, n, depot)
                if add < best:
                    best, bx, by = add, x, y
        if bx < 0:  # no neighbour's route has room: any route that has
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
        if not saved[r]:  # a fallback route: saved before it changes
            save_route(r, succ, n, saved, saved_routes, seq_start, seq, counts)
            before += route_length(r, succ, xy, mat, conv, n, depot, count)
        succ[bx] = c
        pred[c] = bx
        succ[c] = by
        pred[by] = c
        refresh(r, succ, route_of, cum, load, demand, n, count)
    return True, before
