"""SIL for CVRP, route first and cluster second, with the TSP reconstruction model.

Rounds alternate between two moves, both with the TSP model:
* across routes: the routes (sorted by the polar angle of their centroids around the depot,
  as SIL's CVRP reconstruction does) are chained into one giant tour; a PRC round rebuilds
  disjoint segments of it, and an optimal capacity split (Prins) turns the new order back
  into routes; the result is kept only if it is shorter;
* inside routes: disjoint segments of every route (depot fixed at both ends) are rebuilt and
  kept one by one where shorter; loads do not change.
Every capacity holds by construction and the solution never gets worse. ``sil_ls`` adds
classical moves to the start and to every round's result: 2-opt + Or-opt inside each route,
then the granular relocate / swap / 2-opt* descent between routes (``descent.cvrp_descent``,
the neural solvers' polish), and after every round as long again of classical kicks
(``descent.cvrp_kicks``: ruin and recreate around a customer, then the descent there,
annealed on the schedule of the whole solve; each slice of kicks hands back the best plan it
met).

This is not the paper's CVRP head (a second model that decides depot returns while
decoding): here depot returns are decided exactly by the split, and one trained model serves
both problems.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import torch

from solvers.contract import Budget, Clock, ProgressCallback, ProgressEvent
from solvers.routing.classical.construct import split_giant_tour
from solvers.routing.classical.descent import cvrp_descent, polish_routes
from solvers.routing.classical.fleet import fit_fleet
from solvers.routing.classical.kicks import cvrp_kicks, kick_temperature
from solvers.routing.neural.sil.model import (
    RoundHeartbeat,
    model_coords,
    per_token_prior,
    phase_heartbeat,
    prc_round,
    rebuild_batched,
)
from solvers.routing.problem import CVRPInstance


class SILSearch(Protocol):
    """What the CVRP search needs of the SIL solver (``sil.solver.SILSolver``): its model, its
    start tour and its settings."""

    name: str
    polish: bool
    max_segment: int
    params: Any  # SILParams: start_descent_share is read here

    def model(self, problem: str) -> Any: ...

    def start_tour(self, model: Any, xy: np.ndarray, seed: int, clock: Clock,
                   first: int = 0, progress: ProgressCallback | None = None
                   ) -> tuple[np.ndarray, dict[str, Any]]: ...


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


def _path_len(xy: np.ndarray, paths: np.ndarray) -> np.ndarray:
    p = xy[paths]
    return np.sqrt(((p[:, 1:] - p[:, :-1]) ** 2).sum(-1)).sum(-1)


def route_round(model: Any, xy: np.ndarray, coords: torch.Tensor, depot: int,
                routes: list[list[int]], w: int, rng: np.random.Generator,
                deadline: float, stop: Callable[[], bool] | None = None,
                ) -> tuple[list[list[int]], int]:
    """Rebuild disjoint segments inside every route (depot at both ends, fixed), keeping a
    segment only where it got shorter: loads never change, so capacities always hold."""

    paths = [np.array([depot, *r, depot], dtype=np.int64) for r in routes]
    groups: dict[int, list[tuple[int, int]]] = {}
    for k, path in enumerate(paths):
        size = min(w, path.size)
        if size < 4:
            continue
        offset = int(rng.integers(0, path.size - size + 1))
        for start in range(offset, path.size - size + 1, size):
            groups.setdefault(size, []).append((k, start))
    improved = 0
    for size, where in groups.items():
        segs = np.stack([paths[k][s:s + size] for k, s in where])
        new = rebuild_batched(model, coords, segs, deadline, stop=stop)
        better = _path_len(xy, new) < _path_len(xy, segs) - 1e-9
        for (k, s), row, ok in zip(where, new, better, strict=True):
            if ok:
                paths[k][s:s + size] = row
        improved += int(better.sum())
    return [p[1:-1].tolist() for p in paths], improved


def solve_cvrp(solver: SILSearch, instance: CVRPInstance, budget: Budget, clock: Clock,
               progress: ProgressCallback) -> tuple[list[list[int]], dict[str, Any]]:

    assert instance.coords is not None
    model = solver.model("tsp")
    xy = np.ascontiguousarray(instance.coords, dtype=np.float64)
    depot = instance.depot
    rng = np.random.default_rng(budget.seed)
    tour, stats = solver.start_tour(model, xy, budget.seed, clock, first=depot,
                                    progress=progress)
    stats["start"] += " + optimal split"
    stats.update(max_segment=solver.max_segment, model="sil_tsp (route first, cluster second)")
    routes = _split(instance, tour)
    if solver.polish:
        # the descent from a split start may take long on the largest plans (100K nodes:
        # about 15 s from nearest neighbour): at most half the time, the rest to the rounds
        routes = polish_routes(xy, depot, routes)
        share = solver.params.start_descent_share
        routes = cvrp_descent(instance, routes, time.perf_counter() + share * clock.remaining,
                              cancelled=phase_heartbeat(solver.name, clock, progress,
                                                        "start: descent from the split tour",
                                                        instance.cost(routes)))
    routes = fit_fleet(solver.name, instance, routes, clock, budget.seed, stats)
    cap = instance.fleet_cap()
    cost = _euclid_cost(xy, depot, routes)
    stats["start_length"] = cost
    heartbeat = RoundHeartbeat(solver.name, clock, progress, instance.cost(routes))
    progress(ProgressEvent(solver.name, clock.elapsed, 0, heartbeat.best, "start"))
    coords = model_coords(xy)
    n = xy.shape[0]
    top = min(solver.max_segment, n)
    rounds = accepted = kicks_kept = 0
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
            heartbeat.start_round(rounds)
            beating_cancel = heartbeat.check(budget.cancelled)
            if rounds % 2 == 0:
                # Across routes: rebuild the angle-sorted giant tour, re-split it optimally.
                giant = _giant_tour(xy, depot, routes)
                new_tour, _ = prc_round(model, xy, coords, giant, w, rng,
                                        t0 + clock.remaining, beating_cancel, heartbeat)
                candidate = _split(instance, new_tour)
            else:
                # Inside routes: always feasible, kept segment by segment.
                candidate, _ = route_round(model, xy, coords, depot, routes, w, rng,
                                           t0 + clock.remaining, beating_cancel)
            if solver.polish:
                candidate = cvrp_descent(instance, polish_routes(xy, depot, candidate),
                                         t0 + clock.remaining, cancelled=beating_cancel)
            new_cost = _euclid_cost(xy, depot, candidate)
            if new_cost < cost - 1e-9 and len(candidate) <= cap:
                routes, cost = candidate, new_cost
                accepted += 1
            spent = time.perf_counter() - t0
            if solver.polish and not clock.expired():
                # as on the TSP: as long again of classical kicks (ruin and recreate around a
                # customer, then the descent there), annealed on the whole solve's schedule;
                # each slice hands back the best plan it met
                kick_time = min(spent, clock.remaining)
                limit = clock.budget.time_limit
                kicked, kept = cvrp_kicks(
                    instance, routes, time.perf_counter() + kick_time,
                    int(rng.integers(2**31)), cancelled=budget.cancelled,
                    temperature=kick_temperature(clock.elapsed / limit,
                                                 (clock.elapsed + kick_time) / limit))
                kicks_kept += kept
                routes, cost = kicked, _euclid_cost(xy, depot, kicked)
            rate = spent / max((n // w) * w * (w - 2) / 2, 1.0)
            per_token = rate if rounds == 0 else 0.7 * per_token + 0.3 * rate
            rounds += 1
            if rounds % 5 == 0 or spent > 1.0 or clock.remaining < 2 * spent:
                history.append((round(clock.elapsed, 3), cost))
                heartbeat.best = instance.cost(routes)
                progress(ProgressEvent(solver.name, clock.elapsed, rounds, heartbeat.best,
                                       f"round {rounds}, segment {w}"))
    if solver.polish:
        stats["kicks_kept"] = kicks_kept
    stats.update(rounds=rounds, rounds_accepted=accepted, reconstructed_length=cost,
                 length_history=history[-50:])
    return routes, stats
