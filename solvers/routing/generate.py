"""Random routing instances with fixed seeds: uniform TSP and CVRP (Set X's capacity
recipe), Solomon-style CVRPTW built around a reference plan so each one is feasible.
Training, benchmarks and tests draw from the same generators."""

from __future__ import annotations

import math

import numpy as np

from solvers.routing.problem import CVRPTWInstance


def random_tsp(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 2) coordinates."""
    return rng.random((n, 2))


def random_cvrp(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Coordinates (n, 2) with the depot at row 0, demands (n,) with 0 at the depot, and a
    Set-X capacity."""
    coords = rng.random((n, 2))
    demands = rng.integers(1, 10, size=n)
    demands[0] = 0
    r = rng.triangular(3, 6, 25)
    capacity = max(int(demands.max()), math.ceil(r * demands.sum() / (n - 1)))
    return coords, demands, capacity


#: Solomon-like times in unit-square units: Solomon's R and RC sets serve for 10 time units
#: on a 100×100 grid (0.1 of its side); here service takes 0.1 and windows are U(0.1, 0.6)
#: wide, with travel time = Euclidean distance.
CVRPTW_SERVICE_TIME = 0.1
CVRPTW_WINDOW_WIDTH = (0.1, 0.6)
#: The depot's horizon: this factor times the reference solution's latest return.
CVRPTW_HORIZON_SLACK = 1.2


def random_cvrptw(
    rng: np.random.Generator,
    n: int,
    service_time: float = CVRPTW_SERVICE_TIME,
    window_width: tuple[float, float] = CVRPTW_WINDOW_WIDTH,
    horizon_slack: float = CVRPTW_HORIZON_SLACK,
) -> tuple[CVRPTWInstance, list[list[int]]]:
    """A feasible Solomon-style CVRPTW of ``n`` nodes (depot = node 0) and the reference
    routes its windows were built around.

    Coordinates, demands (1–9) and capacity come from ``random_cvrp``. Customers are swept by
    angle around the depot from a random start and cut into routes by capacity; driving those
    routes (travel time = exact Euclidean distance, ``service_time`` per customer, no waiting)
    gives each customer a reference arrival a_i, and its window of width w ~
    U(``window_width``) is placed at a uniform offset so that it contains a_i. The depot's
    window is [0, ``horizon_slack`` × latest reference return]. The reference routes are
    therefore feasible, and so is every customer served alone (triangle inequality), which is
    what the instance's validation demands.
    """
    coords, demands, capacity = random_cvrp(rng, n)
    rel = coords[1:] - coords[0]
    angle = (np.arctan2(rel[:, 1], rel[:, 0]) - rng.uniform(-np.pi, np.pi)) % (2 * np.pi)
    order = np.argsort(angle, kind="stable") + 1
    routes: list[list[int]] = []
    load = capacity + 1
    for c in order.tolist():
        if load + demands[c] > capacity:
            routes.append([])
            load = 0
        routes[-1].append(c)
        load += int(demands[c])
    arrival = np.zeros(n)
    latest_return = 0.0
    for route in routes:
        t, cur = 0.0, 0
        for c in route:
            t += float(np.hypot(*(coords[c] - coords[cur])))
            arrival[c] = t
            t += service_time
            cur = c
        latest_return = max(latest_return, t + float(np.hypot(*(coords[0] - coords[cur]))))
    width = rng.uniform(*window_width, size=n)
    earliest = np.maximum(0.0, arrival - rng.random(n) * width)
    windows = np.stack([earliest, np.maximum(earliest + width, arrival)], axis=1)
    windows[0] = (0.0, horizon_slack * latest_return)
    service = np.full(n, float(service_time))
    service[0] = 0.0
    instance = CVRPTWInstance(coords=coords, distance="exact", demands=demands,
                              capacity=capacity, time_windows=windows, service_times=service)
    return instance, routes


#: Solomon's six families as (coordinates, horizon type); type 1 has short horizons, narrow
#: windows and small vehicles (8–12 routes), type 2 long horizons, wide windows and large
#: vehicles (2–4 routes). Measured on ../shared/data/solomon in units of the coordinate span:
#: horizons 2.5–3.1 (R1, RC1), 13 (C1), 10–14 (R2, RC2), 36 (C2); service 0.10–0.14 (R, RC)
#: and 0.95 (C); window widths 0.1–0.9 (type 1) and 1.2–2.9 (type 2).
SOLOMON_FAMILIES = ("R1", "C1", "RC1", "R2", "C2", "RC2")


def _clustered(rng: np.random.Generator, count: int) -> np.ndarray:
    """Points in 5–12 Gaussian clusters (σ 0.02–0.06), clipped to the unit square."""
    k = int(rng.integers(5, 13))
    centres = rng.uniform(0.1, 0.9, size=(k, 2))
    sigma = rng.uniform(0.02, 0.06, size=k)
    which = rng.integers(0, k, size=count)
    pts = centres[which] + rng.normal(size=(count, 2)) * sigma[which, None]
    return np.clip(pts, 0.0, 1.0)


def solomon_like_cvrptw(rng: np.random.Generator, n: int, family: str | None = None
                        ) -> CVRPTWInstance:
    """A CVRPTW of ``n`` nodes drawn like Solomon's (1987) sets: random (R), clustered (C) or
    mixed (RC) customers around a central depot, a fixed horizon, and windows placed at a
    random time each customer alone can be served (so the instance is feasible with enough
    vehicles); a share of the customers (25–100 %) has a window at all.

    ``random_cvrptw`` builds windows around one reference plan, so its windows are narrow and
    its horizons short; PolyNet trained on it alone failed on Solomon's wide-window type-2
    instances (C201: 9 routes where 3 suffice). This generator covers those.
    """
    family = family or SOLOMON_FAMILIES[int(rng.integers(len(SOLOMON_FAMILIES)))]
    if family not in SOLOMON_FAMILIES:
        raise ValueError(f"family must be one of {SOLOMON_FAMILIES}, got {family!r}")
    shape, kind = family[:-1], family[-1]
    customers = n - 1
    if shape == "R":
        pts = rng.random((customers, 2))
    elif shape == "C":
        pts = _clustered(rng, customers)
    else:
        half = customers // 2
        pts = np.concatenate([rng.random((half, 2)), _clustered(rng, customers - half)])
        pts = pts[rng.permutation(customers)]
    depot = rng.uniform(0.4, 0.6, size=(1, 2))
    coords = np.concatenate([depot, pts])
    demands = rng.integers(1, 10, size=n)
    demands[0] = 0
    share = rng.uniform(0.08, 0.16) if kind == "1" else rng.uniform(0.3, 0.7)
    capacity = max(int(demands.max()), math.ceil(share * demands.sum()))
    service_time = rng.uniform(0.8, 1.0) if shape == "C" else rng.uniform(0.09, 0.14)
    if kind == "1":
        horizon = rng.uniform(11.0, 15.0) if shape == "C" else rng.uniform(2.4, 3.4)
        lo, hi = (0.35, 0.95) if shape == "C" else (0.1, 0.5)
    else:
        horizon = rng.uniform(30.0, 40.0) if shape == "C" else rng.uniform(9.0, 15.0)
        lo, hi = (1.2, 3.0)
    back = np.hypot(*(coords - coords[0]).T)  # depot ↔ customer
    service = np.full(n, service_time)
    service[0] = 0.0
    # Horizons in Solomon's type-1 R sets are barely longer than the farthest round trip.
    horizon = max(horizon, 1.05 * float((2 * back + service).max()))
    latest_start = horizon - back - service  # still home by the horizon
    centre = rng.uniform(back, latest_start)
    width = rng.uniform(lo, hi, size=n)
    earliest = np.maximum(back, centre - width / 2)
    latest = np.minimum(latest_start, centre + width / 2)
    free = rng.random(n) >= rng.choice([0.25, 0.5, 0.75, 1.0])
    earliest[free], latest[free] = 0.0, latest_start[free]
    windows = np.stack([earliest, latest], axis=1)
    windows[0] = (0.0, horizon)
    return CVRPTWInstance(coords=coords, distance="exact", demands=demands, capacity=capacity,
                          time_windows=windows, service_times=service,
                          name=f"solomon-like-{family}")


def cvrptw_instance(seed: int, n: int = 101) -> CVRPTWInstance:
    """The fixed-seed random CVRPTW that benchmarks and tests share (``n`` nodes)."""
    instance, _ = random_cvrptw(np.random.default_rng(seed), n)
    instance.name = f"cvrptw{n - 1}-s{seed}"
    return instance
