"""2-opt + Or-opt inside every route of a plan in one compiled call.

``descent.polish_routes`` ran ``localsearch.two_opt`` route by route: a k-d tree, a
permutation check and a few array conversions per route, about 0.3 ms each, so 34 s for the
121,000 routes of a 1M-customer uniform CVRP (4 s at 100K) before the search began. Here the
neighbour lists of each short route are found by brute force inside numba and the same
``_two_opt_kernel`` runs on it, so the routes come out as the per-route path makes them
(the neighbours are the same up to the order of equally distant nodes).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.routing.classical.localsearch import _two_opt_kernel

#: Routes with more nodes than this go through ``localsearch.two_opt`` one by one: brute-force
#: neighbour lists cost m² log m per route, a k-d tree m log m.
MAX_BATCHED = 400
#: The per-route path's neighbour count and move cap (``localsearch.two_opt``'s defaults).
K = 10
MOVES_PER_NODE = 50


@njit(cache=True, nogil=True)
def _polish_kernel(flat: np.ndarray, starts: np.ndarray, xy: np.ndarray,
                   depot: int) -> np.ndarray:
    """Each route ``flat[starts[r]:starts[r + 1]]`` (depot left out) at its 2-opt + Or-opt
    local optimum with the depot in it, rotated so the depot is first and left out again."""
    out = flat.copy()
    for r in range(starts.size - 1):
        a, b = starts[r], starts[r + 1]
        m = b - a + 1
        if m < 5 or m > MAX_BATCHED + 1:
            continue
        nodes = np.empty(m, np.int64)
        nodes[0] = depot
        nodes[1:] = flat[a:b]
        local = np.empty((m, 2))
        for i in range(m):
            local[i, 0] = xy[nodes[i], 0]
            local[i, 1] = xy[nodes[i], 1]
        k = min(K, m - 1)
        neigh = np.empty((m, k), np.int64)
        dist = np.empty(m)
        for i in range(m):
            for j in range(m):
                dist[j] = np.sqrt((local[i, 0] - local[j, 0]) ** 2
                                  + (local[i, 1] - local[j, 1]) ** 2)
            dist[i] = np.inf  # never its own neighbour, even beside a duplicate point
            order = np.argsort(dist, kind="mergesort")
            neigh[i, :] = order[:k]
        tour = np.arange(m)
        _two_opt_kernel(tour, local, neigh, MOVES_PER_NODE * m, True)
        at = 0
        while tour[at] != 0:
            at += 1
        for t in range(1, m):
            out[a + t - 1] = nodes[tour[(at + t) % m]]
    return out


def polish_all(xy: np.ndarray, depot: int, routes: list[list[int]]) -> list[list[int]]:
    """``routes`` each at its 2-opt + Or-opt optimum (depot included), those of up to
    ``MAX_BATCHED`` customers in one numba call; longer ones are left as given, for the
    caller's per-route path."""
    if not routes:
        return []
    sizes = np.fromiter((len(r) for r in routes), dtype=np.int64, count=len(routes))
    starts = np.zeros(len(routes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    flat = np.fromiter((c for r in routes for c in r), dtype=np.int64, count=int(starts[-1]))
    done = _polish_kernel(flat, starts, np.ascontiguousarray(xy, dtype=np.float64), depot)
    return [p.tolist() for p in np.split(done, starts[1:-1])]
