"""SIL for CVRP, route first and cluster second, with the TSP reconstruction model.

The routes (sorted by the polar angle of their centroids around the depot, as SIL's CVRP
reconstruction does) are chained into one giant tour through the depot; a PRC round rebuilds
disjoint segments of that tour with the TSP model; an optimal capacity split (Prins) turns
the new order back into routes. The current routes are one of the splits the split
considers, so a round never makes the solution worse, and every capacity holds by
construction. This is not the paper's CVRP head (a second model that decides depot returns
while decoding): here depot returns are decided exactly by the split, and one trained
model serves both problems.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from solvers.base import Budget, Clock, ProgressCallback, ProgressEvent
from solvers.errors import NoSolutionError
from solvers.routing.construct import random_insertion_tour, split_giant_tour
from solvers.routing.localsearch import two_opt
from solvers.routing.problem import CVRPInstance

if TYPE_CHECKING:
    from solvers.routing.sil import SILSolver


def _euclid_cost(xy: np.ndarray, depot: int, routes: list[list[int]]) -> float:
    total = 0.0
    for r in routes:
        p = xy[[depot, *r, depot]]
        total += float(np.sqrt(((p[1:] - p[:-1]) ** 2).sum(-1)).sum())
    return total


def _giant_tour(xy: np.ndarray, depot: int, routes: list[list[int]]) -> np.ndarray:
    """Depot, then the routes in order of their centroid's angle around the depot."""
    angle = [np.arctan2(*(xy[r].mean(0) - xy[depot])[::-1]) for r in routes]
    order = np.argsort(angle, kind="stable")
    return np.array([depot, *[v for i in order for v in routes[i]]], dtype=np.int64)


def _split(instance: CVRPInstance, tour: np.ndarray) -> list[list[int]]:
    start = int(np.flatnonzero(tour == instance.depot)[0])
    return split_giant_tour(instance, np.roll(tour, -start)[1:])


def solve_cvrp(solver: SILSolver, instance: CVRPInstance, budget: Budget, clock: Clock,
               progress: ProgressCallback) -> tuple[list[list[int]], dict[str, Any]]:
    from solvers.routing.sil import per_token_prior, prc_round

    assert instance.coords is not None
    model = solver.model("tsp")
    xy = np.ascontiguousarray(instance.coords, dtype=np.float64)
    depot = instance.depot
    rng = np.random.default_rng(budget.seed)
    tour = random_insertion_tour(xy, budget.seed, start=depot)
    stats: dict[str, Any] = {"start": "random insertion + optimal split",
                             "max_segment": solver.max_segment,
                             "model": "sil_tsp (route first, cluster second)"}
    if solver.polish:
        tour, _ = two_opt(xy, tour)
    routes = split_giant_tour(instance, tour[1:])
    cap = instance.fleet_cap()
    if len(routes) > cap:
        raise NoSolutionError(
            solver.name, f"the split start needs {len(routes)} vehicles but max_vehicles is "
            f"{cap}; try the pyvrp or ortools solver")
    cost = _euclid_cost(xy, depot, routes)
    stats["start_length"] = cost
    progress(ProgressEvent(solver.name, clock.elapsed, 0, instance.cost(routes), "start"))
    coords = torch.as_tensor(xy, dtype=torch.float32)
    n = xy.shape[0]
    top = min(solver.max_segment, n)
    rounds = accepted = 0
    per_token = per_token_prior(model)
    history: list[tuple[float, float]] = []
    with torch.inference_mode():
        while top >= 4 and not clock.expired():
            w = int(rng.integers(4, top + 1))
            fit = 2 * clock.remaining / (per_token * n)
            if fit < 4:
                break
            w = min(w, int(fit))
            t0 = time.perf_counter()
            giant = _giant_tour(xy, depot, routes)
            new_tour, _ = prc_round(model, xy, coords, giant, w, rng, t0 + clock.remaining)
            if solver.polish:
                new_tour, _ = two_opt(xy, new_tour)
            candidate = _split(instance, new_tour)
            new_cost = _euclid_cost(xy, depot, candidate)
            if new_cost < cost - 1e-9 and len(candidate) <= cap:
                routes, cost = candidate, new_cost
                accepted += 1
            spent = time.perf_counter() - t0
            rate = spent / max((n // w) * w * (w - 2) / 2, 1.0)
            per_token = rate if rounds == 0 else 0.7 * per_token + 0.3 * rate
            rounds += 1
            if rounds % 5 == 0 or spent > 1.0 or clock.remaining < 2 * spent:
                history.append((round(clock.elapsed, 3), cost))
                progress(ProgressEvent(solver.name, clock.elapsed, rounds,
                                       instance.cost(routes), f"round {rounds}, segment {w}"))
    stats.update(rounds=rounds, rounds_accepted=accepted, reconstructed_length=cost,
                 length_history=history[-50:])
    return routes, stats
