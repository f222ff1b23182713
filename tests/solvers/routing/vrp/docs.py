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


def varied_document(seed: int) -> dict[str, Any]:
    """A small document drawing on most of the format at random: two-dimensional amounts,
    job pickups and deliveries, priorities, skills, shared places, two time windows, several
    breaks with max_load, every vehicle limit, speed factors, costs per hour and per km,
    open routes and ends elsewhere."""
    rng = random.Random(seed)
    doc = small_document(jobs=rng.randint(5, 14), vehicles=rng.randint(1, 3), seed=seed,
                         shipments=rng.randint(0, 3))
    durations = doc["matrices"]["car"]["durations"]
    places = len(durations)
    doc["matrices"]["car"]["distances"] = [[x * rng.choice([7, 10]) for x in r]
                                           for r in durations]
    for job in doc["jobs"]:
        job.update(setup=rng.randint(0, 9), service=rng.randint(0, 20),
                   delivery=[rng.randint(0, 3), rng.randint(0, 2)],
                   pickup=[rng.randint(0, 2), rng.randint(0, 2)], priority=rng.randint(0, 100))
        if rng.random() < .3:
            job["skills"] = [rng.randint(1, 3)]
        if rng.random() < .3:
            job["location_index"] = rng.randrange(1, places)
        if rng.random() < .3:
            a = rng.randint(0, 200)
            job["time_windows"] = [[a, a + 60], [a + 200, a + 350]]
    for shipment in doc.get("shipments", []):
        shipment["amount"] = [rng.randint(1, 3), rng.randint(0, 2)]
        shipment["pickup"]["setup"] = rng.randint(0, 5)
        if rng.random() < .5:
            shipment["delivery"]["time_windows"] = [[rng.randint(0, 300), 900]]
    for v in doc["vehicles"]:
        _vary_vehicle(rng, v, places)
    return doc


def _vary_vehicle(rng: random.Random, v: dict[str, Any], places: int) -> None:
    v.update(capacity=[rng.randint(6, 14), rng.randint(3, 8)],
             skills=rng.sample([1, 2, 3], rng.randint(0, 3)),
             time_window=[rng.randint(0, 50), rng.randint(700, 1100)],
             breaks=[{"id": 10 + b, "service": rng.randint(5, 40),
                      "time_windows": [[150 + 300 * b, 250 + 300 * b]]}
                     for b in range(rng.randint(0, 2))])
    if v["breaks"] and rng.random() < .3:
        v["breaks"][0]["max_load"] = [rng.randint(3, 10), rng.randint(2, 8)]
    for key, low, high in (("max_tasks", 2, 6), ("max_travel_time", 100, 400),
                           ("max_distance", 1000, 4000)):
        if rng.random() < .3:
            v[key] = rng.randint(low, high)
    if rng.random() < .3:
        v["speed_factor"] = rng.choice([0.5, 0.8, 1.3, 2.0, 1.17])
    if rng.random() < .3:
        v["costs"] = {"fixed": rng.randint(0, 100), "per_hour": rng.choice([3600, 1000, 7200]),
                      "per_km": rng.choice([0, 5, 13])}
    if rng.random() < .2:
        v.pop("start_index")
    elif rng.random() < .2:
        v.pop("end_index")
    if rng.random() < .2:
        v["end_index"] = rng.randrange(places)
