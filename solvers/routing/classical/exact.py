"""Exact solutions of tiny TSP and CVRP instances by dynamic programming over subsets.

Local search with pruned neighbour lists can miss the optimum of a 5-node instance
(``ils`` returned 16 on a 5-node TSP whose optimum is 14, and ``ils``/``sil`` 9.657 on the
README's 5-node CVRP whose optimum is 9.071), and the kicks that would escape need 8 nodes.
Up to ``TINY_CUSTOMERS`` customers the whole search space fits in milliseconds: Held-Karp
gives the shortest path from the depot through every subset, and (CVRP) a second DP the
cheapest partition of the customers into routes that fit the capacity and the fleet.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.contract import Budget, Clock, ProgressCallback, ProgressEvent, no_progress
from solvers.errors import NoSolutionError
from solvers.routing.problem import CVRPInstance, CVRPTWInstance, Instance, TSPInstance
from solvers.routing.solution import Solution, build_solution

#: Customers (nodes besides the depot, or node 0 of a TSP) up to which the DP runs: 13 take
#: 6 ms for a CVRP with no fleet cap and up to 25 ms with one (numba, 2-core development
#: machine, beside a test run); 14 took up to 140 ms with a cap.
TINY_CUSTOMERS = 13


@njit(cache=True, nogil=True)
def _held_karp(d: np.ndarray, depot: int, nodes: np.ndarray) -> np.ndarray:
    """``best[S, j]``: the shortest path depot → (every node of bitmask S) ending at
    ``nodes[j]`` (j in S)."""
    m = nodes.shape[0]
    size = 1 << m
    best = np.full((size, m), np.inf)
    for j in range(m):
        best[1 << j, j] = d[depot, nodes[j]]
    for s in range(1, size):
        for j in range(m):
            here = best[s, j]
            if here == np.inf:
                continue
            for k in range(m):
                if (s >> k) & 1:
                    continue
                t = s | (1 << k)
                cand = here + d[nodes[j], nodes[k]]
                if cand < best[t, k]:
                    best[t, k] = cand
    return best


@njit(cache=True, nogil=True)
def _closed(best: np.ndarray, d: np.ndarray, depot: int, nodes: np.ndarray) -> np.ndarray:
    """The cheapest closed route (depot → S → depot) of every subset S."""
    size, m = best.shape
    out = np.full(size, np.inf)
    for s in range(1, size):
        for j in range(m):
            if (s >> j) & 1:
                c = best[s, j] + d[nodes[j], depot]
                if c < out[s]:
                    out[s] = c
    return out


@njit(cache=True, nogil=True)
def _loads(demand: np.ndarray) -> np.ndarray:
    size = 1 << demand.shape[0]
    load = np.zeros(size, dtype=np.int64)
    for s in range(1, size):
        low = s & -s
        j = 0
        while (low >> j) != 1:
            j += 1
        load[s] = load[s ^ low] + demand[j]
    return load


@njit(cache=True, nogil=True)
def _partition(route_cost: np.ndarray, fleet: int) -> tuple[np.ndarray, np.ndarray]:
    """``cover[k, S]``: the cheapest k routes serving exactly S, and the route ``choice[k, S]``
    holding S's lowest customer (so every partition is counted once). ``fleet`` 0 means no
    cap: one layer, ``cover[0, S]`` whatever the number of routes."""
    size = route_cost.shape[0]
    layers = fleet + 1 if fleet > 0 else 1
    cover = np.full((layers, size), np.inf)
    choice = np.zeros((layers, size), dtype=np.int64)
    cover[0, 0] = 0.0
    for k in range(1 if fleet > 0 else 0, layers):
        src = k - 1 if fleet > 0 else 0
        for s in range(1, size):
            low = s & -s
            rest = s ^ low
            t = rest
            while True:  # every subset t of rest: the route is t | low
                r = t | low
                prev = cover[src, s ^ r]
                if prev != np.inf:
                    cand = prev + route_cost[r]
                    if cand < cover[k, s]:
                        cover[k, s] = cand
                        choice[k, s] = r
                if t == 0:
                    break
                t = (t - 1) & rest
    return cover, choice


def _route(best: np.ndarray, d: np.ndarray, depot: int, nodes: list[int], s: int
           ) -> list[int]:
    """The order of the cheapest closed route through S, walked back through ``best``."""
    m = len(nodes)
    last = min((j for j in range(m) if s >> j & 1),
               key=lambda j: best[s, j] + float(d[nodes[j], depot]))
    order = [last]
    while s != 1 << last:
        prev = s & ~(1 << last)
        last = min((j for j in range(m) if prev >> j & 1),
                   key=lambda j: best[prev, j] + float(d[nodes[j], nodes[order[-1]]]))
        order.append(last)
        s = prev
    return [nodes[j] for j in reversed(order)]


def tiny_optimum(instance: Instance) -> list[list[int]] | None:
    """The optimal routes of a TSP or CVRP with at most ``TINY_CUSTOMERS`` customers (None
    above, or for CVRPTW); ``NoSolutionError`` when no partition meets the fleet cap."""
    if isinstance(instance, CVRPTWInstance):
        return None
    if isinstance(instance, TSPInstance):
        depot, others = 0, list(range(1, instance.n))
    elif isinstance(instance, CVRPInstance):
        depot, others = instance.depot, [int(c) for c in instance.customers]
    else:
        return None
    m = len(others)
    if m > TINY_CUSTOMERS:
        return None
    if m == 0:
        return [[depot]] if isinstance(instance, TSPInstance) else []
    d = np.ascontiguousarray(instance.dense_matrix(), dtype=np.float64)
    nodes = np.asarray(others, dtype=np.int64)
    best = _held_karp(d, depot, nodes)
    full = (1 << m) - 1
    if isinstance(instance, TSPInstance):
        return [[depot, *_route(best, d, depot, others, full)]]
    load = _loads(np.asarray([int(instance.demands[c]) for c in others], dtype=np.int64))
    route_cost = np.where(load <= instance.capacity, _closed(best, d, depot, nodes), np.inf)
    # without a fleet cap the number of routes needs no dimension of its own: one is enough
    capped = instance.max_vehicles is not None and instance.max_vehicles < m
    fleet = int(instance.max_vehicles) if capped else m
    cover, choice = _partition(route_cost, fleet if capped else 0)
    k = int(np.argmin(cover[:, full])) if capped else 0
    if cover[k, full] == np.inf:
        # every partition was tried: the search solvers would only run out of time
        raise NoSolutionError(
            f"no plan within the fleet exists (max_vehicles is {instance.max_vehicles}): "
            f"the {m} customers' demands fit in no {fleet} routes of capacity "
            f"{instance.capacity} (proven by enumerating every partition); raise "
            "max_vehicles", field="max_vehicles", more_time_helps=False, proven=True)
    routes, s = [], full
    while s:
        r = int(choice[k, s])
        routes.append(_route(best, d, depot, others, r))
        s ^= r
        if capped:
            k -= 1
    return routes


def warm_up() -> None:
    """Compile the DP kernels (cached on disk after the first time), so that the first tiny
    request does not spend its time limit compiling."""
    xy = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    tiny_optimum(TSPInstance(coords=xy))
    tiny_optimum(CVRPInstance(coords=xy, demands=[0, 1, 1, 1], capacity=2))
    tiny_optimum(CVRPInstance(coords=xy, demands=[0, 1, 1, 1], capacity=2, max_vehicles=2))


#: What a solution found this way says of itself (``stats["exact"]``).
EXACT_NOTE = (f"proven optimal: dynamic programming over subsets (instances of at most "
              f"{TINY_CUSTOMERS} customers)")


def exact_solution(instance: Instance, solver: str, clock: Clock, budget: Budget,
                   progress: ProgressCallback = no_progress) -> Solution | None:
    """A search solver's answer on a tiny instance: the optimum at once, with no time spent
    searching (None when the instance is not tiny)."""
    routes = tiny_optimum(instance)
    if routes is None:
        return None
    sol = build_solution(instance, routes, solver=solver, wall_time=clock.elapsed,
                         stats={"exact": EXACT_NOTE, "seed": budget.seed})
    progress(ProgressEvent(solver, clock.elapsed, 0, sol.cost, "done: proven optimal"))
    return sol
