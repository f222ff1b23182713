"""Small VROOM documents for the tests, generated from a seed so every test reads the same."""

from __future__ import annotations

import random
from typing import Any


def grid_matrix(n: int, seed: int = 0) -> list[list[int]]:
    """Travel times between ``n`` random points of a 100 x 100 square (rounded Euclidean)."""
    rng = random.Random(seed)
    pts = [(rng.uniform(0, 100), rng.uniform(0, 100)) for _ in range(n)]
    return [[round(((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) ** 0.5) for b in pts] for a in pts]


def small_document(jobs: int = 6, vehicles: int = 2, seed: int = 0, shipments: int = 0,
                   capacity: int = 10, windows: bool = True) -> dict[str, Any]:
    """Jobs (and shipments) on a random matrix with a depot at index 0, vehicles with a
    capacity and a working day, loose time windows when ``windows``."""
    rng = random.Random(seed)
    n = 1 + jobs + 2 * shipments
    doc: dict[str, Any] = {
        "vehicles": [{"id": v + 1, "start_index": 0, "end_index": 0, "capacity": [capacity],
                      "time_window": [0, 1000]} for v in range(vehicles)],
        "jobs": [],
        "matrices": {"car": {"durations": grid_matrix(n, seed)}},
    }
    for k in range(jobs):
        job: dict[str, Any] = {"id": 100 + k, "location_index": 1 + k, "service": 5,
                               "delivery": [rng.randint(1, 3)]}
        if windows:
            start = rng.randint(0, 300)
            job["time_windows"] = [[start, start + 400]]
        doc["jobs"].append(job)
    if shipments:
        doc["shipments"] = [
            {"amount": [rng.randint(1, 3)],
             "pickup": {"id": 500 + k, "location_index": 1 + jobs + 2 * k, "service": 3},
             "delivery": {"id": 500 + k, "location_index": 2 + jobs + 2 * k, "service": 3}}
            for k in range(shipments)]
    return doc


def rich_document(seed: int) -> dict[str, Any]:
    """A small document using setup times, shared places, a break with max_load, speed
    factors, fixed and hourly costs, open routes and (every other seed) a cost matrix."""
    rng = random.Random(seed)
    doc = small_document(jobs=8, vehicles=2, seed=seed, shipments=2, capacity=8)
    for job in doc["jobs"]:
        job["setup"] = rng.randint(0, 9)
    doc["jobs"][1]["location_index"] = doc["jobs"][0]["location_index"]
    first, second = doc["vehicles"]
    first["breaks"] = [{"id": 1, "service": 20, "max_load": [6],
                        "time_windows": [[150, 200], [400, 450]]}]
    first["speed_factor"] = rng.choice([1.0, 1.5, 0.7])
    second["costs"] = {"fixed": 50, "per_hour": 1800}
    second.pop(("end_index", "start_index", "time_window")[seed % 3])
    if seed % 2:
        durations = doc["matrices"]["car"]["durations"]
        doc["matrices"]["car"]["costs"] = [[2 * x + 1 for x in row] for row in durations]
        second["costs"] = {"fixed": 50}
    return doc
