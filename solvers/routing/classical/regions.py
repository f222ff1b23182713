"""Several annealed kick searches at once on one large plan, each on its own region
(``kicks.cvrp_kicks`` with ``threads`` > 1 and at least ``REGION_CUSTOMERS`` customers per
thread).

On a large instance a kick changes a few routes near its seed, so two searches that each
kick a whole copy of the plan and keep the better copy (``parallel.run_threads``) waste one
thread's work: on Brussels1 (15,000 customers, 120 s) two such searches were no better than
one. Here the routes are cut into as many regions as threads, by the polar angle of their
centroids around the depot from a random offset; each thread kicks its region as a plan of
its own (its customers, its route slots, neighbour lists among them) for ``ROUND_SECONDS``,
and the regions are sewn back together and cut again elsewhere, so that no border stays.
The regions share no customer and no route, so the union of their plans is a plan of the
whole instance, and the union of their shortest plans is the shortest met in that round.
Each search carries on from its region's current plan, so the annealing is not reset to the
best plan at each round.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from solvers.routing.classical.strings import seed_strings

#: Fewest customers a region holds: below it the border between regions is a large part of
#: each, and ``parallel.run_threads`` runs instead.
REGION_CUSTOMERS = 1000
#: Seconds between two cuts into regions, at least; longer where cutting and sewing (on
#: the calling thread, the others waiting) would take more than ``CUT_SHARE`` of a round:
#: about 0.6 s at 100,000 customers and 5 s at a million.
ROUND_SECONDS = 5.0
CUT_SHARE = 0.05


class _Search(Protocol):
    """What a search (``kicks._Search``, which imports this module) offers the regions."""

    plan: Any
    kept: int
    best_total: float
    total: float
    best: list[np.ndarray]
    mode: Any

    def step(self, now: float) -> None: ...

    def on_region(self, plan: Any, rng: np.random.Generator) -> _Search: ...


def regions_for(customers: int, threads: int) -> int:
    """How many regions ``run_regions`` cuts a plan of ``customers`` into on ``threads``
    threads; below 2, none (``parallel.run_threads`` runs)."""
    return min(threads, customers // REGION_CUSTOMERS)


def run_regions(whole: _Search, regions: int, seed: int, deadline: float,
                slice_seconds: float, on_slice: Callable[[float, int], None] | None,
                cancelled: Callable[[], bool] | None) -> tuple[list[list[int]], int]:
    """Kick ``whole``'s plan in ``regions`` regions at once, one per thread, until
    ``deadline`` or a cancel; returns the shortest plan met (routes, empty ones dropped) and
    the kicks kept. ``on_slice`` hears the shortest length so far every ``slice_seconds``."""
    plan = whole.plan
    rng = np.random.default_rng([seed, 7])
    current = plan.slots()
    best, best_total = current, whole.total
    kept = 0
    numbered = iter(range(1, regions))
    lock = threading.Lock()
    stop = threading.Event()

    def seed_thread() -> None:
        with lock:
            j = next(numbered)
        seed_strings(seed * 7919 + j)

    def kick(search: _Search, end: float) -> None:
        while not stop.is_set() and (now := time.perf_counter()) < end:
            search.step(now)

    round_seconds, cutting = ROUND_SECONDS, 0.0
    with ThreadPoolExecutor(regions - 1, initializer=seed_thread) as pool:
        # no round is begun that its cutting and sewing would end past the deadline
        while (began := time.perf_counter()) + cutting < deadline:
            cut = _cut(plan, current, regions, rng)
            searches = [whole.on_region(plan.region(nodes, routes),
                                        np.random.default_rng(rng.integers(2**63)))
                        for nodes, routes in cut]
            cutting = time.perf_counter() - began
            end = min(deadline, time.perf_counter() + round_seconds)
            futures = [pool.submit(kick, s, end) for s in searches[1:]]
            while (now := time.perf_counter()) < end:
                kick(searches[0], min(end, now + slice_seconds))
                if on_slice is not None:
                    round_best = sum(s.best_total for s in searches)
                    on_slice(min(best_total, round_best), kept + sum(s.kept for s in searches))
                if cancelled is not None and cancelled():
                    stop.set()
                    break
            for f in futures:
                f.result()
            sewing = time.perf_counter()
            current = _sew(cut, searches, use_best=False)
            round_best = sum(s.best_total for s in searches)
            if round_best < best_total:
                best, best_total = _sew(cut, searches, use_best=True), round_best
            cutting += time.perf_counter() - sewing
            round_seconds = max(ROUND_SECONDS, cutting / CUT_SHARE)
            kept += sum(s.kept for s in searches)
            # the next round's regions start in the capacity mode this round ended in (a
            # tight fleet's penalized kicks), not from the plain kicks again
            whole.mode = searches[0].mode
            if stop.is_set():
                break
    return [route for route in best if route], kept


def _cut(plan: Any, slots: list[list[int]], regions: int,
         rng: np.random.Generator) -> list[tuple[np.ndarray, list[list[int]]]]:
    """``slots`` cut into ``regions`` sectors of about as many customers each, by the polar
    angle of each route's centroid around the depot, from a random angle; empty slots go
    round the regions in turn. Each region: its nodes (the depot first) and its routes in
    their positions among those nodes."""
    xy, depot = plan.xy, plan.depot
    filled = [r for r in slots if r]
    centroid = np.array([xy[r].mean(axis=0) for r in filled]).reshape(-1, 2)
    angle = np.arctan2(centroid[:, 1] - xy[depot, 1], centroid[:, 0] - xy[depot, 0])
    angle = (angle - rng.uniform(-np.pi, np.pi)) % (2 * np.pi)
    order = np.argsort(angle, kind="stable")
    sizes = np.array([len(filled[i]) for i in order])
    share = np.cumsum(sizes) / max(1, int(sizes.sum()))
    group = np.minimum((share * regions - 1e-9).astype(np.int64), regions - 1)
    members: list[list[list[int]]] = [[] for _ in range(regions)]
    for g, i in zip(group, order, strict=True):
        members[int(g)].append(filled[i])
    empties = len(slots) - len(filled)
    for e in range(empties):
        members[e % regions].append([])
    out = []
    for routes in members:
        nodes = np.array([depot, *(c for r in routes for c in r)], dtype=np.int64)
        local = np.empty(plan.n, dtype=np.int64)
        local[nodes] = np.arange(nodes.size)
        out.append((nodes, [local[r].tolist() if r else [] for r in routes]))
    return out


def _sew(cut: list[tuple[np.ndarray, list[list[int]]]], searches: list[_Search],
         use_best: bool) -> list[list[int]]:
    """The regions' plans (each one's current, or shortest met) as route slots of the whole
    instance."""
    slots: list[list[int]] = []
    for (nodes, _), search in zip(cut, searches, strict=True):
        part = search.plan
        routes = part.slots(search.best[0] if use_best else part.succ)
        slots += [nodes[r].tolist() if r else [] for r in routes]
    return slots
