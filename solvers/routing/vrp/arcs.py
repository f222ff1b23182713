"""Integer travel times, distances and costs per vehicle, as the library solvers take them.

VROOM's cost of a route is ``fixed + per_hour·duration/3600 + per_km·distance/1000`` (travel
time and distance only; waiting and service cost nothing), or the profile's ``costs`` matrix
where the document gives one. PyVRP and OR-Tools want integers, so each vehicle's cost is
written in units of 1/3,600,000 (per_hour·1000 per second, per_km·3600 per metre, fixed·3.6e6),
divided by the greatest common divisor over the fleet: the default vehicle (per_hour 3600)
then costs one unit per second of travel, the scale VROOM's own examples use. The solvers
optimise this; the checker recomputes the cost users see.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce

import numpy as np

from solvers.routing.vrp.model import DURATION_FACTOR, Vehicle, VrpProblem

#: Cost units per cost unit of VROOM's (see the module's docstring).
UNITS = 3_600_000


@dataclass(frozen=True)
class VehicleCost:
    """A vehicle's integer cost coefficients, in the fleet's common unit: ``fixed`` per route
    used, ``per_duration`` per second of travel, ``per_distance`` per metre, ``per_custom``
    per unit of the profile's costs matrix (then the other two are 0)."""

    fixed: int
    per_duration: int
    per_distance: int
    per_custom: int


def _raw(problem: VrpProblem, vehicle: Vehicle) -> tuple[int, int, int, int]:
    costs = vehicle.costs
    fixed = int(costs.fixed) * UNITS
    if problem.matrices.get(vehicle.profile) is not None \
            and problem.matrices[vehicle.profile].costs is not None:
        return fixed, 0, 0, UNITS
    return fixed, int(costs.per_hour) * 1000, int(costs.per_km) * 3600, 0


def fleet_costs(problem: VrpProblem) -> tuple[list[VehicleCost], int]:
    """Every vehicle's coefficients and the divisor that turns them back into VROOM's cost
    units (cost = internal cost · divisor / UNITS)."""
    raw = [_raw(problem, v) for v in problem.vehicles]
    g = reduce(math.gcd, (c for r in raw for c in r if c), 0) or 1
    return [VehicleCost(*(c // g for c in r)) for r in raw], g


def durations(problem: VrpProblem, vehicle: Vehicle) -> np.ndarray:
    """The vehicle's travel times in seconds: its profile's matrix, divided by its speed
    factor (VROOM counts hundredths of a second inside; the checker does too)."""
    d = np.asarray(problem.matrices[vehicle.profile].durations, dtype=np.int64)
    if vehicle.travel_factor != DURATION_FACTOR:
        d = (d * vehicle.travel_factor + DURATION_FACTOR // 2) // DURATION_FACTOR
    return d


def distances(problem: VrpProblem, vehicle: Vehicle) -> np.ndarray | None:
    """The vehicle's profile's distances, None when the document has none."""
    d = problem.matrices[vehicle.profile].distances
    return None if d is None else np.asarray(d, dtype=np.int64)


def arc_costs(problem: VrpProblem, vehicle: Vehicle, cost: VehicleCost) -> np.ndarray:
    """The integer cost of every arc for this vehicle (its fixed cost aside)."""
    if cost.per_custom:
        custom = np.asarray(problem.matrices[vehicle.profile].costs, dtype=np.int64)
        return custom * cost.per_custom
    d = durations(problem, vehicle)
    out = d * cost.per_duration if cost.per_duration != 1 else d
    if cost.per_distance:
        dist = distances(problem, vehicle)
        if dist is not None:
            out = out + dist * cost.per_distance
    return out


def profile_key(problem: VrpProblem, vehicle: Vehicle, cost: VehicleCost) -> tuple:
    """Vehicles with the same key travel on the same arc costs and times."""
    return (vehicle.profile, vehicle.travel_factor,
            cost.per_duration, cost.per_distance, cost.per_custom)


def task_amounts(vectors: list[tuple[int, ...]], dims: int) -> list[int]:
    """Amounts padded to ``dims`` (a task without amounts carries none)."""
    out = [0] * dims
    for vec in vectors:
        for k, a in enumerate(vec):
            out[k] += int(a)
    return out
