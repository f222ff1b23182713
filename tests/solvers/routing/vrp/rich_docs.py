"""Small VROOM documents that use one rich feature each, for the library solvers' tests."""

from __future__ import annotations

import copy
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
