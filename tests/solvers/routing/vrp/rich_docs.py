"""Small VROOM documents that use one rich feature each, for the library solvers' tests."""

from __future__ import annotations

import copy
import random
from typing import Any

from tests.solvers.routing.vrp.docs import grid_matrix


def line_matrix(n: int, step: int = 10) -> list[list[int]]:
    """Places on a line ``step`` apart: travel time |i - j|·step."""
    return [[abs(i - j) * step for j in range(n)] for i in range(n)]


def mixed_loads() -> dict[str, Any]:
    """One vehicle of capacity 5 from place 0: a job delivering 5 at place 2 and a job
    picking up 5 at place 1. Only delivery first fits (the delivery is on board from the
    start), although the circuit 0 -> 1 -> 2 -> 0 is five times shorter than the other way."""
    return {"vehicles": [{"id": 1, "start_index": 0, "end_index": 0, "capacity": [5]}],
            "jobs": [{"id": 1, "location_index": 1, "pickup": [5]},
                     {"id": 2, "location_index": 2, "delivery": [5]}],
            "matrices": {"car": {"durations": [[0, 10, 50], [50, 0, 10], [10, 50, 0]]}}}


def skills_and_breaks() -> dict[str, Any]:
    """Two vehicles, each with a skill of its own and a 30 s break in [100, 200]; jobs
    needing skill 1 or 2."""
    jobs = [{"id": k + 1, "location_index": k + 1, "service": 20, "skills": [1 + k % 2]}
            for k in range(6)]
    vehicles = [{"id": v + 1, "start_index": 0, "end_index": 0, "skills": [v + 1],
                 "time_window": [0, 2000],
                 "breaks": [{"id": 10 + v, "time_windows": [[100, 200]], "service": 30}]}
                for v in range(2)]
    return {"vehicles": vehicles, "jobs": jobs,
            "matrices": {"car": {"durations": grid_matrix(7, seed=3)}}}


def depots_and_fleet() -> dict[str, Any]:
    """Two depots at either end of a line, a small and a large vehicle, one of them without
    an end (an open route), and a job with two time windows."""
    doc = {"vehicles": [{"id": 1, "start_index": 0, "end_index": 0, "capacity": [2]},
                        {"id": 2, "start_index": 9, "capacity": [10],
                         "costs": {"fixed": 100}}],
           "jobs": [{"id": k, "location_index": k, "delivery": [1]} for k in range(1, 9)],
           "matrices": {"car": {"durations": line_matrix(10)}}}
    doc["jobs"][3]["time_windows"] = [[0, 5], [300, 400]]
    return doc


def one_too_many(priorities: tuple[int, int] = (0, 5)) -> dict[str, Any]:
    """Capacity for one of two jobs only: the one with the higher priority should go."""
    return {"vehicles": [{"id": 1, "start_index": 0, "end_index": 0, "capacity": [3]}],
            "jobs": [{"id": 1, "location_index": 1, "delivery": [3],
                      "priority": priorities[0]},
                     {"id": 2, "location_index": 2, "delivery": [3],
                      "priority": priorities[1]}],
            "matrices": {"car": {"durations": line_matrix(3)}}}


def limits() -> dict[str, Any]:
    """Six jobs, two vehicles with max_tasks 3 and a max_travel_time that rules out the
    farthest job, which is then unassigned."""
    doc = {"vehicles": [{"id": v, "start_index": 0, "end_index": 0, "max_tasks": 3,
                         "max_travel_time": 120} for v in (1, 2)],
           "jobs": [{"id": k, "location_index": k} for k in (1, 2, 3, 4, 5, 6)],
           "matrices": {"car": {"durations": line_matrix(8)}}}
    doc["jobs"].append({"id": 7, "location_index": 7})  # 140 s there and back
    return copy.deepcopy(doc)


def random_document(seed: int) -> dict[str, Any]:
    """A small document drawing each part of the model at random: open routes, several
    depots, amounts in 0-2 dimensions, windows (some two per job), skills, breaks,
    max_tasks/travel time/distance, costs (and a costs matrix), speed factors, setup,
    priorities and shipments."""
    r = random.Random(seed)
    nj, ns, nv, dims = r.randint(0, 8), r.randint(0, 3), r.randint(1, 3), r.choice([0, 1, 2])
    n = 3 + nj + 2 * ns
    m = grid_matrix(n, seed)
    car: dict[str, Any] = {"durations": m}
    if r.random() < 0.3:
        car["distances"] = [[x * 7 for x in row] for row in m]
    if r.random() < 0.15:
        car["costs"] = [[x * 3 for x in row] for row in m]
    doc: dict[str, Any] = {"vehicles": [], "jobs": [], "matrices": {"car": car}}
    for v in range(nv):
        veh: dict[str, Any] = {"id": v + 1}
        kind = r.random()
        if kind < 0.7:
            veh["start_index"] = veh["end_index"] = r.randint(0, 2)
        else:
            veh["start_index" if kind < 0.85 else "end_index"] = r.randint(0, 2)
        if dims:
            veh["capacity"] = [r.randint(3, 12) for _ in range(dims)]
        if r.random() < 0.5:
            veh["time_window"] = [0, r.randint(400, 2000)]
        if r.random() < 0.3:
            veh["skills"] = r.sample([1, 2, 3], r.randint(1, 2))
        if r.random() < 0.3:
            veh["breaks"] = [{"id": 50 + v, "service": r.randint(5, 40),
                              "time_windows": [[r.randint(0, 200), r.randint(300, 600)]]}]
        if r.random() < 0.2:
            veh["max_tasks"] = r.randint(1, 5)
        if r.random() < 0.2:
            veh["max_travel_time"] = r.randint(100, 600)
        if r.random() < 0.2 and "distances" in car:
            veh["max_distance"] = r.randint(700, 4000)
        if r.random() < 0.3 and "costs" not in car:
            veh["costs"] = {"fixed": r.randint(0, 500), "per_hour": r.choice([3600, 1800, 7200])}
            if "distances" in car and r.random() < 0.5:
                veh["costs"]["per_km"] = r.randint(1, 20)
        if r.random() < 0.2:
            veh["speed_factor"] = r.choice([0.5, 1.5, 2.0])
        doc["vehicles"].append(veh)
    for k in range(nj):
        job: dict[str, Any] = {"id": 100 + k, "location_index": 3 + k,
                               "service": r.randint(0, 30)}
        if r.random() < 0.2:
            job["setup"] = r.randint(1, 20)
        if dims and r.random() < 0.7:
            job["delivery"] = [r.randint(0, 4) for _ in range(dims)]
        if dims and r.random() < 0.4:
            job["pickup"] = [r.randint(0, 4) for _ in range(dims)]
        if r.random() < 0.5:
            a = r.randint(0, 400)
            job["time_windows"] = [[a, a + r.randint(50, 400)]]
            if r.random() < 0.3:
                job["time_windows"].append([a + 600, a + 900])
        if r.random() < 0.2:
            job["skills"] = [r.randint(1, 3)]
        if r.random() < 0.2:
            job["priority"] = r.randint(0, 100)
        doc["jobs"].append(job)
    for k in range(ns):
        ship: dict[str, Any] = {
            "pickup": {"id": 300 + k, "location_index": 3 + nj + 2 * k, "service": 5},
            "delivery": {"id": 300 + k, "location_index": 4 + nj + 2 * k, "service": 5}}
        if dims:
            ship["amount"] = [r.randint(1, 4) for _ in range(dims)]
        if r.random() < 0.3:
            ship["pickup"]["time_windows"] = [[0, 500]]
        doc.setdefault("shipments", []).append(ship)
    return doc
