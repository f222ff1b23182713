"""The rich vehicle routing model of VROOM's input format, as frozen dataclasses.

Everything is in VROOM's integer units (seconds, metres, amounts), so a plan checked here and
the same plan solved by VROOM agree to the second. Solvers read this model and return a
``VrpPlan``; the schedule (arrivals, waiting, loads) is never taken from a solver but computed
by ``check.py`` from this model alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np

#: A time window ``(start, end)``, both ends inclusive, in seconds.
Window = tuple[int, int]
#: How travel times and distances were obtained: given matrices, or computed from
#: coordinates on the sphere (lon/lat) or in the plane.
DistanceModel = Literal["matrix", "haversine", "euclidean"]
#: VROOM scales every duration by this factor inside, so that a vehicle's ``speed_factor``
#: changes travel times by hundredths of a second; the checker does the same.
DURATION_FACTOR = 100


@dataclass(frozen=True)
class Job:
    """A single task at one place: deliver ``delivery`` (loaded at the vehicle's start) and/or
    pick up ``pickup`` (brought back to its end). Service starts inside one of
    ``time_windows`` (none: any time); ``setup`` is paid only on arriving from elsewhere."""

    id: int
    location_index: int
    setup: int = 0
    service: int = 0
    delivery: tuple[int, ...] = ()
    pickup: tuple[int, ...] = ()
    skills: frozenset[int] = frozenset()
    priority: int = 0
    time_windows: tuple[Window, ...] = ()
    description: str | None = None
    location: tuple[float, float] | None = None


@dataclass(frozen=True)
class ShipmentStep:
    """The pickup or the delivery half of a shipment."""

    id: int
    location_index: int
    setup: int = 0
    service: int = 0
    time_windows: tuple[Window, ...] = ()
    description: str | None = None
    location: tuple[float, float] | None = None


@dataclass(frozen=True)
class Shipment:
    """A pickup-and-delivery pair: ``amount`` is loaded at the pickup and unloaded at the
    delivery, which must come later on the same vehicle."""

    pickup: ShipmentStep
    delivery: ShipmentStep
    amount: tuple[int, ...] = ()
    skills: frozenset[int] = frozenset()
    priority: int = 0


@dataclass(frozen=True)
class Break:
    """A vehicle break of ``service`` seconds starting in one of ``time_windows``, allowed only
    while the load is at most ``max_load`` (None: any load)."""

    id: int
    time_windows: tuple[Window, ...] = ()
    service: int = 0
    description: str | None = None
    max_load: tuple[int, ...] | None = None


@dataclass(frozen=True)
class VehicleCosts:
    """VROOM's cost of a route: ``fixed`` when used, plus ``per_hour`` per hour of travel and
    ``per_km`` per kilometre (defaults: the travel time in seconds)."""

    fixed: int = 0
    per_hour: int = 3600
    per_km: int = 0


@dataclass(frozen=True)
class StepSpec:
    """One step of a vehicle's starting plan (``vehicles[].steps``): a task or a break, by its
    VROOM id. ``pinned`` (a cosolve addition) keeps the step on this vehicle and in this order;
    ``service_at/after/before`` are kept as given (VROOM uses them only in its plan mode)."""

    type: Literal["job", "pickup", "delivery", "break"]
    id: int
    pinned: bool = False
    service_at: int | None = None
    service_after: int | None = None
    service_before: int | None = None


@dataclass(frozen=True)
class Vehicle:
    """A vehicle: where it starts and ends (either may be None, not both), its capacity per
    dimension, skills, working hours, breaks and route limits."""

    id: int
    profile: str = "car"
    start_index: int | None = None
    end_index: int | None = None
    capacity: tuple[int, ...] = ()
    skills: frozenset[int] = frozenset()
    time_window: Window | None = None
    breaks: tuple[Break, ...] = ()
    max_tasks: int | None = None
    max_travel_time: int | None = None
    max_distance: int | None = None
    costs: VehicleCosts = VehicleCosts()
    speed_factor: float = 1.0
    steps: tuple[StepSpec, ...] = ()
    description: str | None = None
    type: str | None = None
    start_location: tuple[float, float] | None = None
    end_location: tuple[float, float] | None = None

    @property
    def travel_factor(self) -> int:
        """Travel time per matrix second, in hundredths of a second (VROOM's rounding)."""
        return round(DURATION_FACTOR / self.speed_factor)


@dataclass(frozen=True)
class Matrices:
    """One profile's square int64 matrices, indexed by location index: ``durations`` always,
    ``distances`` and ``costs`` when given (or computed from coordinates)."""

    durations: np.ndarray
    distances: np.ndarray | None = None
    costs: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.durations.shape[0])


@dataclass(frozen=True)
class VrpProblem:
    """A VROOM document, parsed and checked: tasks, vehicles and matrices per profile.

    ``locations`` holds the coordinates of each location index where the document gave them
    (None where it did not, or None overall when it gave none), for GeoJSON output.
    ``amount_size`` is the number of dimensions of every amount and capacity."""

    jobs: tuple[Job, ...]
    shipments: tuple[Shipment, ...]
    vehicles: tuple[Vehicle, ...]
    matrices: Mapping[str, Matrices] = field(compare=False)
    locations: tuple[tuple[float, float] | None, ...] | None = None
    amount_size: int = 0
    distance_model: DistanceModel = "matrix"

    def duration(self, profile: str, i: int, j: int) -> int:
        """The matrix travel time from location ``i`` to ``j`` (before a speed factor)."""
        return int(self.matrices[profile].durations[i, j])

    def distance(self, profile: str, i: int, j: int) -> int:
        """The distance from ``i`` to ``j`` in metres; 0 when the profile has no distances
        (then nothing may depend on them: the parser refuses ``max_distance`` and ``per_km``)."""
        d = self.matrices[profile].distances
        return 0 if d is None else int(d[i, j])

    def has_distances(self, profile: str) -> bool:
        return self.matrices[profile].distances is not None

    @property
    def task_count(self) -> int:
        """Jobs plus both halves of every shipment."""
        return len(self.jobs) + 2 * len(self.shipments)

    @cached_property
    def job_index(self) -> dict[int, int]:
        """Job id -> index into ``jobs``."""
        return {job.id: k for k, job in enumerate(self.jobs)}

    @cached_property
    def pickup_index(self) -> dict[int, int]:
        """Shipment pickup id -> index into ``shipments``."""
        return {s.pickup.id: k for k, s in enumerate(self.shipments)}

    @cached_property
    def delivery_index(self) -> dict[int, int]:
        """Shipment delivery id -> index into ``shipments``."""
        return {s.delivery.id: k for k, s in enumerate(self.shipments)}

    @cached_property
    def vehicle_index(self) -> dict[int, int]:
        """Vehicle id -> index into ``vehicles``."""
        return {v.id: k for k, v in enumerate(self.vehicles)}

    @property
    def zero_amount(self) -> tuple[int, ...]:
        return (0,) * self.amount_size
