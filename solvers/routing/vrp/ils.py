"""The ``ils`` VRP solver: the classical iterated local search of ``solvers.routing.classical``
on the part of VROOM's model it was built for, a CVRP on coordinates.

What it takes: one depot (every vehicle starts and ends at the same place), one kind of
vehicle (one capacity dimension, or none), jobs that only deliver or only pick up (their
service and setup times are allowed: without time windows they change no cost), the default
cost (travel time), and coordinates for every place. Its moves (2-opt, Or-opt, the granular
descent, ruin and recreate) work on Euclidean neighbour lists, so the travel times must be
what the coordinates say: a document read from coordinates (planar, or lon/lat projected to
the plane around their mean latitude, which keeps city-scale distances within a fraction of
a percent), or a matrix beside coordinates that is a constant multiple of their Euclidean
distances (checked on the matrix: within 1% plus a rounding unit). Time windows, shipments,
skills, breaks, several depots, mixed fleets, route limits, costs and priorities are not for
its moves, and the registry refuses them by name.

A job whose amount exceeds the capacity is left unassigned (the checker gives the reason);
the rest are routed with at most as many routes as vehicles. Where the fleet cannot carry
everything, all is routed without a cap and the routes carrying most are kept, the others'
jobs unassigned (the search itself cannot leave a job out). The checker recomputes the cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from solvers.contract import Budget, Clock, ProgressEvent, no_progress
from solvers.errors import NoSolutionError
from solvers.routing.problem import CVRPInstance
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.plan import RoutePlan, TaskRef, VrpPlan, complete_plan

NAME = "ils"
#: Nothing beyond a plain CVRP (see the module's docstring).
FEATURES: frozenset[str] = frozenset()
#: Relative tolerance of a matrix against the coordinates' Euclidean distances.
MATRIX_TOLERANCE = 0.01
_EARTH_M = 6_371_000.0


def _planar(problem: VrpProblem) -> np.ndarray | None:
    """Coordinates of every location index in the plane, None when some are missing."""
    if problem.locations is None or any(p is None for p in problem.locations):
        return None
    xy = np.asarray(problem.locations, dtype=np.float64)
    if problem.distance_model == "haversine":
        lat0 = math.radians(float(xy[:, 1].mean()))
        return np.column_stack((np.radians(xy[:, 0]) * math.cos(lat0) * _EARTH_M,
                                np.radians(xy[:, 1]) * _EARTH_M))
    return xy


def _matrix_fits(problem: VrpProblem, xy: np.ndarray) -> bool:
    """Whether the (first) duration matrix is a constant multiple of the Euclidean distances
    of ``xy``, within MATRIX_TOLERANCE plus one rounding unit."""
    d = np.asarray(next(iter(problem.matrices.values())).durations, dtype=np.float64)
    sample = np.arange(d.shape[0])[:: max(1, d.shape[0] // 200)]
    e = np.sqrt(((xy[sample][:, None, :] - xy[None, :, :]) ** 2).sum(axis=2))
    m = d[sample]
    off = e > 0
    if not off.any():
        return False
    ratio = float(np.median(m[off] / e[off]))
    return bool(ratio > 0 and np.all(np.abs(m - ratio * e) <= MATRIX_TOLERANCE * ratio * e + 1))


def supports(problem: VrpProblem) -> str | None:
    """Why ``ils`` cannot take ``problem`` beyond the registry's features (None when it can)."""
    if problem.amount_size > 1:
        return "jobs[].delivery: ils takes one amount dimension"
    if any(any(j.pickup) for j in problem.jobs) and any(any(j.delivery) for j in problem.jobs):
        return "jobs[].pickup: ils takes jobs that all deliver or all pick up, not both"
    v = problem.vehicles[0]
    if v.start_index is None or v.start_index != v.end_index:
        return "vehicles[0].end_index: ils needs routes that return to their start"
    if len(problem.matrices) > 1:
        return "vehicles[].profile: ils takes one profile"
    xy = _planar(problem)
    if xy is None:
        return "jobs[].location: ils needs coordinates for every place"
    if problem.distance_model == "matrix" and not _matrix_fits(problem, xy):
        return ("matrices: ils needs travel times proportional to the coordinates' "
                "Euclidean distances; these are not")
    return None


def solve(problem: VrpProblem, budget: Budget, seed: int = 0,
          on_progress: Callable[[ProgressEvent], None] | None = None) -> VrpPlan:
    """The classical ILS on the problem as a CVRP instance (node 0 the depot, node k the
    k-th job that fits a vehicle), its routes read back as jobs."""
    from solvers.routing.classical.ils import ILSSolver

    clock = Clock(budget)
    warm_up()  # the first call in a process loads the compiled kernels (seconds)
    budget = replace(budget, time_limit=max(0.05, clock.remaining))
    xy = _planar(problem)
    assert xy is not None  # supports() said so
    vehicle = problem.vehicles[0]
    cap = int(vehicle.capacity[0]) if vehicle.capacity else None
    amounts = [int((j.delivery or j.pickup or (0,))[0]) for j in problem.jobs]
    fits = [k for k, a in enumerate(amounts) if cap is None or a <= cap]
    if not fits:
        return complete_plan(problem, [])
    coords = xy[[vehicle.start_index] + [problem.jobs[k].location_index for k in fits]]
    capacity = cap if cap is not None else len(fits)
    demands = [0] + ([amounts[k] for k in fits] if cap is not None else [1] * len(fits))
    fleet = len(problem.vehicles)
    # a fleet too small for all the load: route everything without a cap, then keep the
    # fleet's worth of routes that carry most, the rest unassigned (ils cannot drop tasks)
    capped = math.ceil(sum(demands) / max(capacity, 1)) <= fleet
    progress = on_progress if on_progress is not None else no_progress
    solution = None
    if capped:
        instance = CVRPInstance(name="vrp", coords=coords, demands=demands,
                                capacity=max(capacity, 1), depot=0, max_vehicles=fleet)
        try:
            solution = ILSSolver().solve(instance, replace(budget, seed=seed), progress)
        except NoSolutionError:
            if clock.remaining < 0.1 * budget.time_limit:
                raise
    if solution is None:
        instance = CVRPInstance(name="vrp", coords=coords, demands=demands,
                                capacity=max(capacity, 1), depot=0)
        solution = ILSSolver().solve(
            instance, replace(budget, seed=seed, time_limit=max(clock.remaining, 0.05)),
            progress)
    kept = sorted((r for r in solution.routes if r),
                  key=lambda r: -sum(demands[node] for node in r))[:fleet]
    routes = [RoutePlan(v, tuple(TaskRef("job", fits[node - 1]) for node in route))
              for v, route in enumerate(kept)]
    return complete_plan(problem, routes)


_WARM: list[bool] = []


def warm_up() -> None:
    """Load the classical search's compiled kernels once per process (about 6 s the first
    time on the 2-core machine, cached on disk after the first compile); ``solve`` does it
    itself, inside its time limit, and the benchmarks before their clocks."""
    from solvers.routing.classical.ils import ILSSolver

    if not _WARM:
        ILSSolver().warm_up()
        _WARM.append(True)
