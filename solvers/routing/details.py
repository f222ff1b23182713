"""What a routing answer says about its plan beyond the cost: each route's load, distance and
duration, each CVRPTW stop's times, a summary, and the units all of these are in.

Computed from the instance and the routes alone, under the instance's own distance
convention, never from a solver's bookkeeping; the stop times come from the checker's own
schedule (``check.route_schedule``), so the times an answer shows are the times that were
checked. Travel time equals distance (Solomon's and LKH-3's definition), so durations are in
the distance's units.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.routing.check import route_schedule
from solvers.routing.problem import (
    CVRPInstance,
    CVRPTWInstance,
    Instance,
    TSPInstance,
)

#: What each convention makes of the coordinates, for the ``units`` of an answer.
_CONVENTION_UNITS = {
    "exact": "the coordinates' units (straight-line distances, not rounded)",
    "EUC_2D": "the coordinates' units, each edge rounded to the nearest integer (TSPLIB "
              "EUC_2D)",
    "CEIL_2D": "the coordinates' units, each edge rounded up (CEIL_2D)",
    "FLOOR_2D": "the coordinates' units, each edge rounded down (FLOOR_2D)",
    "ATT": "TSPLIB's ATT pseudo-Euclidean distance of the coordinates (integers)",
    "EXPLICIT": "the distance matrix's units",
}


def units(instance: Instance) -> dict[str, Any]:
    """The units of an answer's costs, distances and times, in words, and the file's SCALE.

    A file's SCALE (LKH-3's Solomon files: 10) has already multiplied its coordinates,
    windows and service times, so every figure is SCALE times the unscaled one: C101's
    8273 is the literature's 827.3.
    """
    scale = int(getattr(instance, "scale", 1))
    distance = _CONVENTION_UNITS.get(instance.distance, instance.distance)
    if scale != 1:
        distance = (f"{distance}, after the file's SCALE {scale}: every distance and time is "
                    f"{scale} times the unscaled figure (divide by {scale} for published "
                    "Solomon values)")
    time = ("travel time equals distance, so times and durations are in the distance's "
            "units" + ("; windows and service times as the instance gives them"
                       + (f" (multiplied by SCALE {scale})" if scale != 1 else "")
                       if isinstance(instance, CVRPTWInstance) else ""))
    return {"distance": distance, "time": time, "scale": scale}


def route_details(instance: Instance, routes: list[list[int]]) -> list[dict[str, Any]]:
    """One entry per route, in the order of ``routes`` (an empty route too): ``stops``,
    ``load`` and ``capacity`` (null for a TSP), ``distance``, ``duration`` (travel, plus
    service and waiting with windows), and for a CVRPTW ``service``, ``waiting``, ``start``
    and ``end`` (leaving and back at the depot) and a ``schedule`` per stop."""
    if isinstance(instance, TSPInstance):
        tour = routes[0]
        length = instance.tour_cost(tour) if len(tour) else 0.0
        return [_route(0, len(tour), None, None, length, length)]
    assert isinstance(instance, CVRPInstance)
    distances = _route_distances(instance, routes)
    out = []
    for k, route in enumerate(routes):
        load = int(instance.demands[np.asarray(route, dtype=np.int64)].sum())
        entry = _route(k, len(route), load, instance.capacity, distances[k], distances[k])
        if isinstance(instance, CVRPTWInstance):
            entry.update(_timed_route(instance, route, distances[k]))
        out.append(entry)
    return out


def _route(k: int, stops: int, load: int | None, capacity: int | None, distance: float,
           duration: float) -> dict[str, Any]:
    return {"route": k, "stops": stops, "load": load, "capacity": capacity,
            "distance": float(distance), "duration": float(duration), "service": None,
            "waiting": None, "start": None, "end": None, "schedule": None}


def _route_distances(instance: CVRPInstance, routes: list[list[int]]) -> list[float]:
    """Each route's length, depot to depot, in one vectorized pass over all the legs."""
    lengths = [0.0] * len(routes)
    used = [k for k, r in enumerate(routes) if len(r)]
    if not used:
        return lengths
    # the routes joined through the depot, as the instance's cost joins them: each route's
    # legs run from its depot to the next one
    depot = np.array([instance.depot], dtype=np.int64)
    parts: list[np.ndarray] = []
    for k in used:
        parts += [depot, np.asarray(routes[k], dtype=np.int64)]
    whole = np.concatenate([*parts, depot])
    legs = instance.edge_lengths(whole[:-1], whole[1:])
    at_depot = np.cumsum([0] + [len(routes[k]) + 1 for k in used[:-1]])
    for k, total in zip(used, np.add.reduceat(legs, at_depot).tolist(), strict=True):
        lengths[k] = float(total)
    return lengths


def _timed_route(instance: CVRPTWInstance, route: list[int],
                 distance: float) -> dict[str, Any]:
    """The route's timetable (leaving when the depot opens, as the checker simulates it)."""
    start = instance.horizon[0]
    if not len(route):
        return {"service": 0.0, "waiting": 0.0, "start": None, "end": None, "schedule": []}
    arrivals, begins, back = route_schedule(instance, route)
    stops = np.asarray(route, dtype=np.int64)
    service = instance.service_times[stops].tolist()
    ids = (instance.node_ids[stops].tolist() if instance.node_ids is not None
           else [None] * len(route))
    schedule = [
        {"node": node, "id": id_, "arrival": arrival, "waiting": begin - arrival,
         "start": begin, "departure": begin + served}
        for node, id_, arrival, begin, served in zip(stops.tolist(), ids, arrivals, begins,
                                                     service, strict=True)
    ]
    return {"service": float(sum(service)), "waiting": float(sum(s["waiting"] for s in schedule)),
            "start": start, "end": back, "duration": back - start, "schedule": schedule}


def summary(instance: Instance, details: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over ``route_details``: routes listed, vehicles used (non-empty routes), load,
    distance, duration, and with windows service, waiting and the latest return."""
    used = [d for d in details if d["stops"]]
    timed = isinstance(instance, CVRPTWInstance)
    return {
        "routes": len(details),
        "vehicles_used": len(used),
        "total_load": (None if isinstance(instance, TSPInstance)
                       else int(sum(d["load"] for d in details))),
        "total_distance": float(sum(d["distance"] for d in details)),
        "total_duration": float(sum(d["duration"] for d in details)),
        "total_service": float(sum(d["service"] for d in details)) if timed else None,
        "total_waiting": float(sum(d["waiting"] for d in details)) if timed else None,
        "latest_return": max((d["end"] for d in used), default=None) if timed else None,
    }


def solution_details(instance: Instance, routes: list[list[int]]) -> dict[str, Any] | None:
    """``route_details``, ``summary`` and ``units`` of a plan, or None when the plan cannot
    be read against the instance (a node index outside it, a TSP given as several tours):
    its violations say why."""
    if isinstance(instance, TSPInstance) and len(routes) != 1:
        return None
    if any(not 0 <= int(v) < instance.n for r in routes for v in r):
        return None
    details = route_details(instance, routes)
    return {"route_details": details, "summary": summary(instance, details),
            "units": units(instance)}
