"""Exact solutions of tiny TSP and CVRP instances by dynamic programming over subsets.

Local search with pruned neighbour lists can miss the optimum of a 5-node instance (QA sweep:
``ils`` returned 16 on a 5-node TSP whose optimum is 14, and ``ils``/``sil`` 9.657 on the
README's 5-node CVRP whose optimum is 9.071), and the kicks that would escape need 8 nodes.
Up to ``TINY_CUSTOMERS`` customers the whole search space fits in milliseconds: Held-Karp
gives the shortest path from the depot through every subset, and (CVRP) a second DP the
cheapest partition of the customers into routes that fit the capacity and the fleet.
"""

from __future__ import annotations

import math

import numpy as np

from solvers.base import Budget, Clock, ProgressCallback, ProgressEvent, no_progress
from solvers.errors import NoSolutionError
from solvers.routing.problem import (
    CVRPInstance,
    CVRPTWInstance,
    Instance,
    Solution,
    TSPInstance,
    build_solution,
)

#: Customers (nodes besides the depot, or node 0 of a TSP) up to which the DP runs.
TINY_CUSTOMERS = 9


def _paths(d: np.ndarray, depot: int, nodes: list[int]) -> list[list[float]]:
    """``best[S][j]``: the shortest path depot → (every node of bitmask S) ending at
    ``nodes[j]`` (j in S); Held-Karp."""
    m = len(nodes)
    best = [[math.inf] * m for _ in range(1 << m)]
    for j in range(m):
        best[1 << j][j] = float(d[depot, nodes[j]])
    for s in range(1, 1 << m):
        row = best[s]
        for j in range(m):
            here = row[j]
            if here == math.inf:
                continue
            for k in range(m):
                if s >> k & 1:
                    continue
                cand = here + float(d[nodes[j], nodes[k]])
                if cand < best[s | 1 << k][k]:
                    best[s | 1 << k][k] = cand
    return best


def _route(best: list[list[float]], d: np.ndarray, depot: int, nodes: list[int], s: int
           ) -> list[int]:
    """The order of the cheapest closed route through S, walked back through ``best``."""
    m = len(nodes)
    last = min((j for j in range(m) if s >> j & 1),
               key=lambda j: best[s][j] + float(d[nodes[j], depot]))
    order = [last]
    while s != 1 << last:
        prev = s & ~(1 << last)
        last = min((j for j in range(m) if prev >> j & 1),
                   key=lambda j: best[prev][j] + float(d[nodes[j], nodes[order[-1]]]))
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
    d = np.asarray(instance.dense_matrix(), dtype=np.float64)
    best = _paths(d, depot, others)
    full = (1 << m) - 1
    closed = [min((best[s][j] + float(d[others[j], depot]) for j in range(m) if s >> j & 1),
                  default=math.inf) for s in range(1 << m)]
    if isinstance(instance, TSPInstance):
        return [[depot, *_route(best, d, depot, others, full)]]
    demand = [int(instance.demands[c]) for c in others]
    load = [sum(demand[j] for j in range(m) if s >> j & 1) for s in range(1 << m)]
    route_cost = [closed[s] if load[s] <= instance.capacity else math.inf
                  for s in range(1 << m)]
    fleet = min(m, instance.max_vehicles if instance.max_vehicles is not None else m)
    # cover[k][S]: the cheapest k routes serving exactly S; each step takes the route holding
    # S's lowest customer, so every partition is counted once
    cover = [[math.inf] * (1 << m) for _ in range(fleet + 1)]
    choice = [[0] * (1 << m) for _ in range(fleet + 1)]
    cover[0][0] = 0.0
    for k in range(1, fleet + 1):
        for s in range(1, 1 << m):
            low = s & -s
            rest = s ^ low
            t = rest
            while True:  # every subset t of rest: the route is t | low
                r = t | low
                cand = cover[k - 1][s ^ r] + route_cost[r]
                if cand < cover[k][s]:
                    cover[k][s], choice[k][s] = cand, r
                if t == 0:
                    break
                t = (t - 1) & rest
    k = min(range(1, fleet + 1), key=lambda q: cover[q][full])
    if cover[k][full] == math.inf:
        # every partition was tried: the search solvers would only run out of time
        raise NoSolutionError(
            f"no plan within the fleet exists (max_vehicles is {instance.max_vehicles}): "
            f"the {m} customers' demands fit in no {fleet} routes of capacity "
            f"{instance.capacity} (proven by enumerating every partition); raise "
            "max_vehicles", field="max_vehicles", more_time_helps=False)
    routes, s = [], full
    while s:
        r = choice[k][s]
        routes.append(_route(best, d, depot, others, r))
        s ^= r
        k -= 1
    return routes


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
