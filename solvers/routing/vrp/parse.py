"""VROOM's input document (docs/API.md of VROOM) read into a ``VrpProblem``.

Every refusal is an ``InstanceError`` whose field is a path into the document as VROOM users
write it (``jobs[3].location_index``, ``matrices.car.durations``), so the API's 422 and the
CLI's message point at the offending key. A key of VROOM's format that we do not model
(``setup_per_type``, ``per_task_hour``, the deprecated ``matrix`` and ``amount``) is refused by
name rather than ignored: a plan that silently dropped it would be wrong without saying so.
Unknown keys are refused too, since a misspelt ``time_window`` would otherwise vanish.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.errors import InstanceError
from solvers.routing.vrp.model import (
    Break,
    Job,
    Matrices,
    Shipment,
    ShipmentStep,
    StepSpec,
    Vehicle,
    VehicleCosts,
    VrpProblem,
    Window,
)

#: Travel speeds (km/h) per profile when travel times come from coordinates.
DEFAULT_SPEEDS_KMH: dict[str, float] = {"car": 50.0, "truck": 40.0, "bike": 15.0, "foot": 5.0}
#: The largest time, amount or matrix entry accepted: VROOM's, which reads them as unsigned
#: 32-bit integers (so the vroom solver takes every document we accept).
MAX_VALUE = 2**32 - 1
#: Mean Earth radius in metres (the IUGG value), for haversine distances.
EARTH_RADIUS_M = 6_371_008.8

_TOP_KEYS = {"jobs", "shipments", "vehicles", "matrices"}
_JOB_KEYS = {"id", "description", "location", "location_index", "setup", "service",
             "delivery", "pickup", "skills", "priority", "time_windows"}
_STEP_KEYS = {"id", "description", "location", "location_index", "setup", "service",
              "time_windows", "amount"}
_SHIPMENT_KEYS = {"pickup", "delivery", "amount", "skills", "priority"}
_VEHICLE_KEYS = {"id", "profile", "description", "start", "start_index", "end", "end_index",
                 "capacity", "costs", "skills", "type", "time_window", "breaks",
                 "speed_factor", "max_tasks", "max_travel_time", "max_distance", "steps"}
_BREAK_KEYS = {"id", "time_windows", "service", "description", "max_load"}
_VSTEP_KEYS = {"type", "id", "service_at", "service_after", "service_before", "pinned"}
_COST_KEYS = {"fixed", "per_hour", "per_km"}
_MATRIX_KEYS = {"durations", "distances", "costs"}
#: Keys of VROOM's format that this model does not take, with the reason given to the user.
_UNSUPPORTED = {
    "matrix": "the deprecated single matrix is not supported; give matrices.<profile>",
    "amount": "the deprecated job amount is not supported; use delivery (or pickup)",
    "setup_per_type": "setup times per vehicle type are not supported",
    "service_per_type": "service times per vehicle type are not supported",
    "per_task_hour": "a cost per task hour is not supported",
}


@dataclass(frozen=True)
class ParseParams:
    """How to turn coordinates into travel times when a document has no matrices: speeds per
    profile (``default_speed_kmh`` for the others), and ``planar`` to read coordinates as
    metres in the plane (Euclidean) rather than as lon/lat (haversine). Coordinates outside
    lon/lat's range are read as planar anyway."""

    speed_kmh: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_SPEEDS_KMH))
    default_speed_kmh: float = 50.0
    planar: bool = False


def _check_keys(obj: Mapping[str, Any], allowed: set[str], path: str) -> None:
    for key in obj:
        if key in allowed:
            continue
        where = f"{path}.{key}" if path else str(key)
        if key in _UNSUPPORTED:
            raise InstanceError(where, _UNSUPPORTED[key])
        raise InstanceError(where, f"unknown key; expected one of {', '.join(sorted(allowed))}")


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InstanceError(path, f"must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise InstanceError(path, f"must be an array, got {type(value).__name__}")
    return list(value)


def _uint(value: Any, path: str, limit: int = MAX_VALUE) -> int:
    """A non-negative integer (a float with an integral value passes; a bool does not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InstanceError(path, f"must be a non-negative integer, got {value!r}")
    if not (isinstance(value, numbers.Integral)
            or (math.isfinite(value) and float(value).is_integer())):
        raise InstanceError(path, f"must be a non-negative integer, got {value!r}")
    number = int(value)
    if number < 0:
        raise InstanceError(path, f"must not be negative, got {number}")
    if number > limit:
        raise InstanceError(path, f"must be at most {limit}, got {number}")
    return number


def _opt_uint(obj: Mapping[str, Any], key: str, path: str) -> int | None:
    return None if obj.get(key) is None else _uint(obj[key], f"{path}.{key}")


def _uint_or(obj: Mapping[str, Any], key: str, path: str, default: int) -> int:
    return default if obj.get(key) is None else _uint(obj[key], f"{path}.{key}")


def _text(obj: Mapping[str, Any], key: str, path: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise InstanceError(f"{path}.{key}", f"must be a string, got {value!r}")
    return value


def _amount(value: Any, path: str) -> tuple[int, ...]:
    return tuple(_uint(x, f"{path}[{k}]") for k, x in enumerate(_list(value, path)))


def _skills(obj: Mapping[str, Any], path: str) -> frozenset[int]:
    if obj.get("skills") is None:
        return frozenset()
    where = f"{path}.skills"
    return frozenset(_uint(x, f"{where}[{k}]") for k, x in enumerate(_list(obj["skills"], where)))


def _window(value: Any, path: str) -> Window:
    pair = _list(value, path)
    if len(pair) != 2:
        raise InstanceError(path, f"a time window is [start, end], got {len(pair)} values")
    start, end = _uint(pair[0], f"{path}[0]"), _uint(pair[1], f"{path}[1]")
    if end < start:
        raise InstanceError(path, f"ends ({end}) before it starts ({start})")
    return start, end


def _windows(obj: Mapping[str, Any], path: str) -> tuple[Window, ...]:
    """Time windows sorted by start, so the earliest usable one is the first that fits."""
    if obj.get("time_windows") is None:
        return ()
    where = f"{path}.time_windows"
    windows = [_window(w, f"{where}[{k}]") for k, w in enumerate(_list(obj["time_windows"], where))]
    if not windows:
        raise InstanceError(where, "must not be empty (leave the key out for no time window)")
    ordered = sorted(windows)
    for a, b in itertools.pairwise(ordered):
        if b[0] <= a[1]:  # VROOM refuses windows that touch or overlap, so do we
            raise InstanceError(where, f"windows {list(a)} and {list(b)} overlap")
    return tuple(ordered)


def _priority(obj: Mapping[str, Any], path: str) -> int:
    value = _uint_or(obj, "priority", path, 0)
    if value > 100:
        raise InstanceError(f"{path}.priority", f"must be in [0, 100], got {value}")
    return value


def _coordinates(value: Any, path: str) -> tuple[float, float]:
    pair = _list(value, path)
    if len(pair) != 2 or not all(isinstance(x, numbers.Real) and not isinstance(x, bool)
                                 and math.isfinite(x) for x in pair):
        raise InstanceError(path, f"must be two finite numbers [lon, lat], got {value!r}")
    return float(pair[0]), float(pair[1])


class _Places:
    """Location indices of a document: given ones checked against the matrices' size, or, in
    a document without matrices, one index per distinct coordinate pair."""

    def __init__(self, size: int | None) -> None:
        self.size = size
        self.coords: dict[int, tuple[float, float]] = {}
        self.by_coords: dict[tuple[float, float], int] = {}

    def place(self, obj: Mapping[str, Any], path: str, key: str = "location",
              index_key: str = "location_index") -> tuple[int | None, tuple[float, float] | None]:
        coords = None if obj.get(key) is None else _coordinates(obj[key], f"{path}.{key}")
        if self.size is None:  # no matrices: coordinates are the locations
            if coords is None:
                return None, None
            if coords not in self.by_coords:
                self.by_coords[coords] = len(self.by_coords)
                self.coords[self.by_coords[coords]] = coords
            return self.by_coords[coords], coords
        if obj.get(index_key) is None:
            return None, coords
        index = _uint(obj[index_key], f"{path}.{index_key}")
        if index >= self.size:
            raise InstanceError(f"{path}.{index_key}", f"unknown location index {index}: the "
                                f"matrices have {self.size} rows")
        if coords is not None:
            self.coords.setdefault(index, coords)
        return index, coords

    def task(self, obj: Mapping[str, Any], path: str) -> tuple[int, tuple[float, float] | None]:
        index, coords = self.place(obj, path)
        if index is None:
            needed = "location" if self.size is None else "location_index"
            raise InstanceError(f"{path}.{needed}", "missing" + (
                " (the document has matrices)" if self.size is not None
                else " (the document has no matrices)"))
        return index, coords


def _job(obj: Any, path: str, places: _Places) -> Job:
    obj = _mapping(obj, path)
    _check_keys(obj, _JOB_KEYS, path)
    if "id" not in obj:
        raise InstanceError(f"{path}.id", "missing")
    index, coords = places.task(obj, path)
    return Job(
        id=_uint(obj["id"], f"{path}.id"), location_index=index,
        setup=_uint_or(obj, "setup", path, 0),
        service=_uint_or(obj, "service", path, 0),
        delivery=_amount(obj.get("delivery") or [], f"{path}.delivery"),
        pickup=_amount(obj.get("pickup") or [], f"{path}.pickup"),
        skills=_skills(obj, path), priority=_priority(obj, path),
        time_windows=_windows(obj, path), description=_text(obj, "description", path),
        location=coords)


def _shipment_step(obj: Any, path: str, places: _Places
                   ) -> tuple[ShipmentStep, tuple[int, ...] | None]:
    obj = _mapping(obj, path)
    _check_keys(obj, _STEP_KEYS, path)
    if "id" not in obj:
        raise InstanceError(f"{path}.id", "missing")
    index, coords = places.task(obj, path)
    step = ShipmentStep(
        id=_uint(obj["id"], f"{path}.id"), location_index=index,
        setup=_uint_or(obj, "setup", path, 0),
        service=_uint_or(obj, "service", path, 0),
        time_windows=_windows(obj, path), description=_text(obj, "description", path),
        location=coords)
    amount = None if obj.get("amount") is None else _amount(obj["amount"], f"{path}.amount")
    return step, amount


def _shipment(obj: Any, path: str, places: _Places) -> Shipment:
    """A shipment; an ``amount`` on its pickup or delivery (not VROOM's, but written by tools
    that model the two halves apart) is accepted only where both halves and the shipment
    agree, since one load cannot be picked up as one amount and delivered as another."""
    obj = _mapping(obj, path)
    _check_keys(obj, _SHIPMENT_KEYS, path)
    for half in ("pickup", "delivery"):
        if half not in obj:
            raise InstanceError(f"{path}.{half}", "missing")
    pickup, p_amount = _shipment_step(obj["pickup"], f"{path}.pickup", places)
    delivery, d_amount = _shipment_step(obj["delivery"], f"{path}.delivery", places)
    amount = None if obj.get("amount") is None else _amount(obj["amount"], f"{path}.amount")
    if p_amount is not None and d_amount is not None and p_amount != d_amount:
        raise InstanceError(f"{path}.delivery.amount", f"differs from the pickup's amount "
                            f"({list(d_amount)} against {list(p_amount)})")
    for given, where in ((p_amount, "pickup.amount"), (d_amount, "delivery.amount")):
        if given is not None and amount is not None and given != amount:
            raise InstanceError(f"{path}.{where}", f"differs from the shipment's amount "
                                f"({list(given)} against {list(amount)})")
    amount = amount if amount is not None else (p_amount if p_amount is not None else d_amount)
    return Shipment(pickup, delivery, amount or (), _skills(obj, path), _priority(obj, path))


def _costs(obj: Mapping[str, Any], path: str) -> VehicleCosts:
    if obj.get("costs") is None:
        return VehicleCosts()
    where = f"{path}.costs"
    costs = _mapping(obj["costs"], where)
    _check_keys(costs, _COST_KEYS, where)
    return VehicleCosts(fixed=_uint_or(costs, "fixed", where, 0),
                        per_hour=_uint_or(costs, "per_hour", where, 3600),
                        per_km=_uint_or(costs, "per_km", where, 0))


def _break(obj: Any, path: str) -> Break:
    obj = _mapping(obj, path)
    _check_keys(obj, _BREAK_KEYS, path)
    if "id" not in obj:
        raise InstanceError(f"{path}.id", "missing")
    max_load = None if obj.get("max_load") is None else _amount(obj["max_load"], f"{path}.max_load")
    return Break(id=_uint(obj["id"], f"{path}.id"), time_windows=_windows(obj, path),
                 service=_uint_or(obj, "service", path, 0),
                 description=_text(obj, "description", path), max_load=max_load)


_STEP_TYPES = ("start", "job", "pickup", "delivery", "break", "end")


def _vehicle_steps(obj: Mapping[str, Any], path: str) -> tuple[StepSpec, ...]:
    """The starting plan's task and break steps (start and end steps are checked and
    dropped: they carry nothing a route does not already have)."""
    if obj.get("steps") is None:
        return ()
    where = f"{path}.steps"
    specs = []
    for k, raw in enumerate(_list(obj["steps"], where)):
        here = f"{where}[{k}]"
        step = _mapping(raw, here)
        _check_keys(step, _VSTEP_KEYS, here)
        kind = step.get("type")
        if kind not in _STEP_TYPES:
            raise InstanceError(f"{here}.type", f"must be one of {', '.join(_STEP_TYPES)}, "
                                f"got {kind!r}")
        pinned = step.get("pinned", False)
        if not isinstance(pinned, bool):
            raise InstanceError(f"{here}.pinned", f"must be true or false, got {pinned!r}")
        if kind in ("start", "end"):
            continue
        if step.get("id") is None:
            raise InstanceError(f"{here}.id", f"missing (a {kind} step names its task)")
        specs.append(StepSpec(kind, _uint(step["id"], f"{here}.id"), pinned,
                              _opt_uint(step, "service_at", here),
                              _opt_uint(step, "service_after", here),
                              _opt_uint(step, "service_before", here)))
    return tuple(specs)


def _check_breaks(breaks: tuple[Break, ...], shift: Window | None, path: str) -> None:
    """A vehicle's breaks, taken in the order given (as VROOM takes them), must all fit in
    its working hours; VROOM refuses the document otherwise, and so do we, naming the
    first break that cannot."""
    opens, closes = shift if shift is not None else (0, MAX_VALUE * 4)
    everywhere = ((0, MAX_VALUE * 4),)
    earliest, t = [], opens
    for k, b in enumerate(breaks):
        window = next((w for w in b.time_windows or everywhere if t <= w[1]), None)
        if window is None:
            raise InstanceError(f"{path}.breaks[{k}]", "cannot start in its time windows after "
                                "the breaks before it (breaks are taken in the order given)")
        earliest.append(max(t, window[0]))
        t = earliest[-1] + b.service
    latest = closes
    for k in range(len(breaks) - 1, -1, -1):
        b = breaks[k]
        latest -= b.service
        window = next((w for w in reversed(b.time_windows or everywhere) if w[0] <= latest),
                      None)
        if window is None or min(latest, window[1]) < earliest[k]:
            raise InstanceError(f"{path}.breaks[{k}]", "does not fit in the vehicle's "
                                "time_window with the breaks given after it")
        latest = min(latest, window[1])


def _vehicle(obj: Any, path: str, places: _Places) -> Vehicle:
    obj = _mapping(obj, path)
    _check_keys(obj, _VEHICLE_KEYS, path)
    if "id" not in obj:
        raise InstanceError(f"{path}.id", "missing")
    profile = obj.get("profile", "car")
    if not isinstance(profile, str) or not profile:
        raise InstanceError(f"{path}.profile", f"must be a non-empty string, got {profile!r}")
    start, start_xy = places.place(obj, path, "start", "start_index")
    end, end_xy = places.place(obj, path, "end", "end_index")
    if start is None and end is None:
        key = "start" if places.size is None else "start_index"
        raise InstanceError(f"{path}.{key}", "a vehicle needs a start or an end (or both)")
    speed = obj.get("speed_factor", 1.0)
    if (isinstance(speed, bool) or not isinstance(speed, numbers.Real)
            or not math.isfinite(speed) or not 0 < speed <= 5):
        raise InstanceError(f"{path}.speed_factor", f"must be in (0, 5], got {speed!r}")
    breaks = ()
    if obj.get("breaks") is not None:
        breaks = tuple(_break(b, f"{path}.breaks[{k}]")
                       for k, b in enumerate(_list(obj["breaks"], f"{path}.breaks")))
        ids = [b.id for b in breaks]
        for k, b in enumerate(breaks):
            if ids.index(b.id) != k:
                raise InstanceError(f"{path}.breaks[{k}].id", f"duplicate break id {b.id}")
    capacity = None if obj.get("capacity") is None else _amount(obj["capacity"], f"{path}.capacity")
    shift = None if obj.get("time_window") is None else _window(obj["time_window"],
                                                                f"{path}.time_window")
    _check_breaks(breaks, shift, path)
    return Vehicle(
        id=_uint(obj["id"], f"{path}.id"), profile=profile, start_index=start, end_index=end,
        capacity=capacity if capacity is not None else (), skills=_skills(obj, path),
        time_window=shift,
        breaks=breaks, max_tasks=_opt_uint(obj, "max_tasks", path),
        max_travel_time=_opt_uint(obj, "max_travel_time", path),
        max_distance=_opt_uint(obj, "max_distance", path), costs=_costs(obj, path),
        speed_factor=float(speed), steps=_vehicle_steps(obj, path),
        description=_text(obj, "description", path), type=_text(obj, "type", path),
        start_location=start_xy, end_location=end_xy)


def _matrix(value: Any, path: str, size: int | None) -> np.ndarray:
    rows = _list(value, path)
    if not rows:
        raise InstanceError(path, "must not be empty")
    n = len(rows)
    for r, row in enumerate(rows):
        if not isinstance(row, (list, tuple)) or len(row) != n:
            got = len(row) if isinstance(row, (list, tuple)) else type(row).__name__
            raise InstanceError(f"{path}[{r}]", f"the matrix must be square: {n} rows, but "
                                f"row {r} has {got} entries")
    # numpy infers int64 for integer rows (one array, no float copy: a 10,000-place matrix
    # is 800 MB); floats pass when integral; anything else (bools, strings) is refused
    try:
        matrix = np.array(rows)
    except (TypeError, ValueError):
        matrix = None
    if matrix is not None and matrix.dtype.kind == "i" and any(
            bool in set(map(type, row)) for row in rows):
        matrix = None  # numpy reads true as 1 among integers; JSON's true is no duration
    if matrix is not None and matrix.dtype.kind == "f" and (
            not np.isfinite(matrix).all() or (matrix != np.round(matrix)).any()):
        matrix = None
    if matrix is None or matrix.dtype.kind not in "iuf" or matrix.shape != (n, n):
        raise InstanceError(path, "entries must be integers")
    if (matrix < 0).any():
        r, c = (int(x) for x in np.argwhere(matrix < 0)[0])
        raise InstanceError(f"{path}[{r}][{c}]", f"must not be negative, got {matrix[r, c]:g}")
    if (matrix > MAX_VALUE).any():
        raise InstanceError(path, f"entries must be at most {MAX_VALUE}")
    if size is not None and n != size:
        raise InstanceError(path, f"has {n} rows but the profile's durations have {size}")
    return matrix.astype(np.int64)


def _matrices(doc: Mapping[str, Any]) -> dict[str, Matrices]:
    raw = _mapping(doc["matrices"], "matrices")
    if not raw:
        raise InstanceError("matrices", "must not be empty (leave the key out to use coordinates)")
    result = {}
    for profile, entry in raw.items():
        path = f"matrices.{profile}"
        entry = _mapping(entry, path)
        _check_keys(entry, _MATRIX_KEYS, path)
        if entry.get("durations") is None:
            raise InstanceError(f"{path}.durations", "missing (distances and costs come with "
                                "durations)")
        durations = _matrix(entry["durations"], f"{path}.durations", None)
        n = durations.shape[0]
        result[str(profile)] = Matrices(
            durations,
            None if entry.get("distances") is None
            else _matrix(entry["distances"], f"{path}.distances", n),
            None if entry.get("costs") is None else _matrix(entry["costs"], f"{path}.costs", n))
    sizes = {m.size for m in result.values()}
    if len(sizes) > 1:
        raise InstanceError("matrices", f"every profile's matrices must have the same size, "
                            f"got {sorted(sizes)}")
    return result


def _is_lonlat(coords: list[tuple[float, float]]) -> bool:
    return all(-180 <= x <= 180 and -90 <= y <= 90 for x, y in coords)


def coordinate_matrices(coords: list[tuple[float, float]], planar: bool
                        ) -> np.ndarray:
    """Distances in metres between coordinate pairs: great-circle (haversine) for lon/lat,
    Euclidean for planar coordinates read as metres; rounded to whole metres."""
    xy = np.array(coords, dtype=np.float64).reshape(-1, 2)
    if planar:
        diff = xy[:, None, :] - xy[None, :, :]
        return np.rint(np.sqrt((diff * diff).sum(axis=2))).astype(np.int64)
    lon, lat = np.radians(xy[:, 0]), np.radians(xy[:, 1])
    dlat = lat[None, :] - lat[:, None]
    dlon = lon[None, :] - lon[:, None]
    h = np.sin(dlat / 2) ** 2 + np.cos(lat[:, None]) * np.cos(lat[None, :]) * np.sin(dlon / 2) ** 2
    return np.rint(2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.clip(h, 0, 1)))).astype(np.int64)


def _speed(params: ParseParams, profile: str) -> float:
    speed = params.speed_kmh.get(profile, params.default_speed_kmh)
    if not speed > 0:
        raise InstanceError("speed_kmh", f"the speed of profile {profile!r} must be "
                            f"positive, got {speed!r}")
    return float(speed)


def _amount_size(jobs: tuple[Job, ...], shipments: tuple[Shipment, ...],
                 vehicles: tuple[Vehicle, ...]) -> int:
    """The one number of amount dimensions: the longest amount anywhere. A task amount left
    out means zeros; a shorter one, or a vehicle capacity with fewer dimensions (or none),
    is refused by name."""
    given: list[tuple[str, tuple[int, ...]]] = []
    for k, j in enumerate(jobs):
        given += [(f"jobs[{k}].delivery", j.delivery), (f"jobs[{k}].pickup", j.pickup)]
    given += [(f"shipments[{k}].amount", s.amount) for k, s in enumerate(shipments)]
    caps = [(f"vehicles[{k}].capacity", v.capacity) for k, v in enumerate(vehicles)]
    brk = [(f"vehicles[{k}].breaks[{b}].max_load", br.max_load or ())
           for k, v in enumerate(vehicles) for b, br in enumerate(v.breaks)]
    size = max((len(a) for _, a in given + caps + brk), default=0)
    for where, amount in given + brk:
        if amount and len(amount) != size:
            raise InstanceError(where, f"has {len(amount)} dimensions but other amounts have "
                                f"{size}")
    for where, capacity in caps:
        if len(capacity) != size:
            raise InstanceError(where, f"has {len(capacity)} dimensions but the tasks' amounts "
                                f"have {size}" if capacity else
                                f"missing: the tasks' amounts have {size} dimensions")
    return size


def _pad(amount: tuple[int, ...], size: int) -> tuple[int, ...]:
    return amount if amount else (0,) * size


def _check_ids(jobs: tuple[Job, ...], shipments: tuple[Shipment, ...],
               vehicles: tuple[Vehicle, ...]) -> None:
    def unique(ids: list[int], paths: list[str], what: str) -> None:
        seen: set[int] = set()
        for value, where in zip(ids, paths, strict=True):
            if value in seen:
                raise InstanceError(where, f"duplicate {what} id {value}")
            seen.add(value)

    unique([j.id for j in jobs], [f"jobs[{k}].id" for k in range(len(jobs))], "job")
    for half in ("pickup", "delivery"):
        unique([getattr(s, half).id for s in shipments],
               [f"shipments[{k}].{half}.id" for k in range(len(shipments))], half)
    unique([v.id for v in vehicles], [f"vehicles[{k}].id" for k in range(len(vehicles))],
           "vehicle")


def _check_steps(problem: VrpProblem) -> None:
    """Every starting-plan step names an existing task of its kind, once in the whole
    document (a break: one of its own vehicle's)."""
    known = {"job": problem.job_index, "pickup": problem.pickup_index,
             "delivery": problem.delivery_index}
    used: set[tuple[str, int]] = set()
    for v, vehicle in enumerate(problem.vehicles):
        break_ids = {b.id for b in vehicle.breaks}
        for k, step in enumerate(vehicle.steps):
            where = f"vehicles[{v}].steps[{k}].id"
            exists = step.id in break_ids if step.type == "break" else step.id in known[step.type]
            if not exists:
                raise InstanceError(where, f"no {step.type} has id {step.id}")
            key = (step.type if step.type != "break" else f"break{v}", step.id)
            if key in used:
                raise InstanceError(where, f"the {step.type} {step.id} is in a starting plan twice")
            used.add(key)


def _check_profiles(problem: VrpProblem) -> None:
    """What the matrices must give for each vehicle: a matrix for its profile, distances when
    it has a distance limit or a price per km, and no travel price when costs are given."""
    for v, vehicle in enumerate(problem.vehicles):
        if vehicle.profile not in problem.matrices:
            raise InstanceError(f"vehicles[{v}].profile", f"no matrix for profile "
                                f"{vehicle.profile!r}; matrices are given for "
                                f"{', '.join(sorted(problem.matrices))}")
        m = problem.matrices[vehicle.profile]
        if m.distances is None:
            if vehicle.max_distance is not None:
                raise InstanceError(f"vehicles[{v}].max_distance", "needs distances: give "
                                    f"matrices.{vehicle.profile}.distances")
            if vehicle.costs.per_km:
                raise InstanceError(f"vehicles[{v}].costs.per_km", "needs distances: give "
                                    f"matrices.{vehicle.profile}.distances")
        if m.costs is not None and (vehicle.costs.per_hour != 3600 or vehicle.costs.per_km):
            raise InstanceError(f"vehicles[{v}].costs", "per_hour and per_km cannot be "
                                f"combined with matrices.{vehicle.profile}.costs")


def parse_document(doc: Mapping[str, Any], params: ParseParams | None = None) -> VrpProblem:
    """A VROOM input document as a checked ``VrpProblem`` (see the module's docstring)."""
    params = params or ParseParams()
    doc = _mapping(doc, "document")
    _check_keys(doc, _TOP_KEYS, "")
    if doc.get("vehicles") is None:
        raise InstanceError("vehicles", "missing: a VROOM document needs at least one vehicle")
    matrices = _matrices(doc) if doc.get("matrices") is not None else None
    size = None if matrices is None else next(iter(matrices.values())).size
    places = _Places(size)
    raw_jobs = _list(doc.get("jobs") or [], "jobs")
    raw_shipments = _list(doc.get("shipments") or [], "shipments")
    raw_vehicles = _list(doc["vehicles"], "vehicles")
    if not raw_vehicles:
        raise InstanceError("vehicles", "must not be empty")
    jobs = tuple(_job(j, f"jobs[{k}]", places) for k, j in enumerate(raw_jobs))
    shipments = tuple(_shipment(s, f"shipments[{k}]", places) for k, s in enumerate(raw_shipments))
    vehicles = tuple(_vehicle(v, f"vehicles[{k}]", places) for k, v in enumerate(raw_vehicles))
    _check_ids(jobs, shipments, vehicles)
    amount_size = _amount_size(jobs, shipments, vehicles)
    jobs = tuple(Job(**{**j.__dict__, "delivery": _pad(j.delivery, amount_size),
                        "pickup": _pad(j.pickup, amount_size)}) for j in jobs)
    shipments = tuple(Shipment(s.pickup, s.delivery, _pad(s.amount, amount_size), s.skills,
                               s.priority) for s in shipments)
    model = "matrix"
    if matrices is None:
        coords = [places.coords[k] for k in range(len(places.coords))]
        planar = params.planar or not _is_lonlat(coords)
        model = "euclidean" if planar else "haversine"
        metres = coordinate_matrices(coords, planar)
        matrices = {}
        for profile in sorted({v.profile for v in vehicles}):
            seconds = np.rint(metres / (_speed(params, profile) / 3.6)).astype(np.int64)
            matrices[profile] = Matrices(seconds, metres)
        size = len(coords)
    locations = None
    if places.coords:
        locations = tuple(places.coords.get(k) for k in range(size or 0))
    problem = VrpProblem(jobs, shipments, vehicles, matrices, locations, amount_size, model)
    _check_profiles(problem)
    _check_steps(problem)
    return problem
