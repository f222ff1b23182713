"""Several annealed kick searches at once, one per thread, sharing the best plan
(``kicks.cvrp_kicks`` with ``threads`` > 1; ``ils`` on a machine with two or more CPUs), on
plans too small to cut into regions of ``regions.REGION_CUSTOMERS`` customers a thread.

The kick kernels release the GIL (numba ``nogil``), so each thread kicks its own copy of the
plan's arrays at full speed; the neighbour lists and distances are shared, read-only, so the
memory grows by a few arrays of n per thread. The searches run in slices of
``slice_seconds``: between two slices the calling thread hears the shortest length so far
(``on_slice``) and the cancel flag, and every ``EXCHANGE_SLICES`` slices each search whose
shortest plan is longer than the best search's continues from that plan, so the time spent
on a worse region is not lost while the others keep their own draws (numba's generator is
per thread, seeded per search). A search started from fewer routes (``ils``'s route
minimisation) takes the best plan only when it uses no more routes than that search holds,
so it keeps to its few routes all the run, however long they are at first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from solvers.routing.classical.strings import seed_strings


class _Search(Protocol):
    """What a search (``kicks._Search``, which imports this module) offers the threads."""

    plan: Any
    kept: int
    best_total: float

    def step(self, now: float) -> None: ...

    def twin(self, rng: np.random.Generator, routes: list[list[int]] | None = None,
             arrays: tuple[np.ndarray, ...] | None = None) -> _Search: ...

    def adopt(self, other: _Search) -> None: ...

    def best_routes(self) -> int: ...

#: Slices between two exchanges of the best plan.
EXCHANGE_SLICES = 5


def _kick_until(search: _Search, end: float) -> None:
    while (now := time.perf_counter()) < end:
        search.step(now)


def run_threads(first: _Search, threads: int, seed: int, deadline: float,
                slice_seconds: float, on_slice: Callable[[float, int], None] | None,
                cancelled: Callable[[], bool] | None,
                fewer_routes: Callable[[list[list[int]]], list[list[int]] | None] | None = None,
                ) -> tuple[_Search, int]:
    """``first`` and ``threads`` − 1 twins of it (other draws) kick until ``deadline`` or a
    cancel; returns the search holding the shortest plan and the kicks kept in all.
    ``first`` runs on the calling thread, whose numba generator the caller seeded. The
    second search starts from ``fewer_routes(routes)`` when that gives a plan (see
    ``ROUTE_MINIMISATION``), computed on its own thread while ``first`` kicks."""
    start = first.plan.routes()
    # the twins are made on the pool's threads while ``first`` kicks its arrays in place
    # (numba releases the GIL), so they copy this snapshot, never the arrays in motion
    still = tuple(a.copy() for a in first.arrays)
    numbered = iter(range(1, threads))
    lock = threading.Lock()

    def seed_thread() -> None:
        with lock:
            j = next(numbered)
        seed_strings(seed * 7919 + j)

    def make(j: int) -> _Search:
        rng = np.random.default_rng([seed, j])
        routes = fewer_routes(start) if j == 1 and fewer_routes is not None else None
        return first.twin(rng, routes, still)

    def begin(j: int, end: float) -> _Search:
        search = make(j)
        _kick_until(search, end)
        return search

    first.step(time.perf_counter())  # one kick even past the deadline, as one thread does
    slices = 0
    searches = [first]
    with ThreadPoolExecutor(threads - 1, initializer=seed_thread) as pool:
        while (now := time.perf_counter()) < deadline:
            end = min(deadline, now + slice_seconds)
            if len(searches) == 1:
                futures = [pool.submit(begin, j, end) for j in range(1, threads)]
            else:
                futures = [pool.submit(_kick_until, s, end) for s in searches[1:]]
            _kick_until(first, end)
            while not all(f.done() for f in futures) and time.perf_counter() < deadline:
                _kick_until(first, min(deadline, time.perf_counter() + 0.05))
            results = [f.result() for f in futures]
            if len(searches) == 1:
                searches += results
            best = min(searches, key=lambda s: s.best_total)
            if on_slice is not None:
                on_slice(best.best_total, sum(s.kept for s in searches))
            if cancelled is not None and cancelled():
                break
            slices += 1
            if slices % EXCHANGE_SLICES == 0:
                routes = best.best_routes()
                for s in searches:
                    # a search held to fewer route slots keeps them (see ROUTE_MINIMISATION)
                    if (s is not best and s.best_total > best.best_total + s.plan.eps
                            and routes <= s.plan.count):
                        s.adopt(best)
    return min(searches, key=lambda s: s.best_total), sum(s.kept for s in searches)
