"""TSP, CVRP and CVRPTW instances, their distance conventions, costs and solutions.

Distances follow the convention the instance declares, because published optima depend on it:
TSPLIB's EUC_2D rounds every edge to the nearest integer, CEIL_2D rounds up, FLOOR_2D rounds
down (LKH-3's Solomon files, on coordinates multiplied by their SCALE), ATT is TSPLIB's
pseudo-Euclidean distance, ``exact`` is the plain float Euclidean distance (our default for
coordinates posted as JSON) and ``EXPLICIT`` reads a given matrix. Every Solution says which
convention its cost uses. Nothing here builds an N×N matrix unless asked to, so the same code
serves 100K-node instances.
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any, ClassVar, Literal

import numpy as np

from solvers.errors import InstanceError

Convention = Literal["exact", "EUC_2D", "CEIL_2D", "FLOOR_2D", "ATT", "EXPLICIT"]
COORD_CONVENTIONS: tuple[str, ...] = ("exact", "EUC_2D", "CEIL_2D", "FLOOR_2D", "ATT")
CONVENTIONS: tuple[str, ...] = (*COORD_CONVENTIONS, "EXPLICIT")
ProblemName = Literal["tsp", "cvrp", "cvrptw"]

#: Above this many nodes ``dense_matrix`` refuses: 20K² float64 is 3.2 GB.
DENSE_MATRIX_LIMIT = 20_000
#: Largest coordinate or distance accepted: a 100K-edge tour of such edges, scaled to integers,
#: still fits the int64 arithmetic of OR-Tools and PyVRP, which overflow silently beyond it.
MAX_ABS_VALUE = 1e12
#: Capacities (and so demands) must fit a signed 32-bit integer for the same reason.
MAX_CAPACITY = 2**31 - 1


def _nint(x: np.ndarray) -> np.ndarray:
    """TSPLIB's nint: round half up (``int(x + 0.5)``), not numpy's banker's rounding."""
    return np.floor(x + 0.5)


def coordinate_distance(
    xy_a: np.ndarray, xy_b: np.ndarray, convention: str
) -> np.ndarray:
    """Distances between matching rows of two (m, 2) coordinate arrays under a convention."""
    d = xy_a - xy_b
    return squared_to_distance(d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1], convention)


def squared_to_distance(sq: np.ndarray, convention: str) -> np.ndarray:
    """Distances under a convention from squared Euclidean distances (so a caller may get
    those from a faster routine, e.g. scipy's ``cdist``)."""
    if convention == "exact":
        return np.sqrt(sq)
    if convention == "EUC_2D":
        return _nint(np.sqrt(sq))
    if convention == "CEIL_2D":
        return np.ceil(np.sqrt(sq))
    if convention == "FLOOR_2D":
        return np.floor(np.sqrt(sq))
    if convention == "ATT":
        r = np.sqrt(sq / 10.0)
        t = _nint(r)
        return np.where(t < r, t + 1.0, t)
    raise ValueError(f"not a coordinate convention: {convention}")


class RoutingInstance:
    """Nodes given by 2-D coordinates or by an explicit distance matrix."""

    problem: ClassVar[str] = "routing"
    min_nodes: ClassVar[int] = 2

    def __init__(
        self,
        *,
        name: str = "instance",
        coords: Any = None,
        distance_matrix: Any = None,
        distance: str | None = None,
        node_ids: Any = None,
    ) -> None:
        self.name = name
        if coords is None and distance_matrix is None:
            raise InstanceError("coords", "give coordinates or a distance matrix")
        self.coords: np.ndarray | None = None
        self.matrix: np.ndarray | None = None
        if distance_matrix is not None:
            self.matrix = _validate_matrix(distance_matrix)
            n = self.matrix.shape[0]
            if coords is not None:
                # Coordinates beside a matrix only serve drawings and neighbour lists.
                self.coords = _validate_coords(coords)
                if self.coords.shape[0] != n:
                    raise InstanceError(
                        "coords",
                        f"{self.coords.shape[0]} coordinates for a {n}×{n} distance matrix",
                    )
            if distance not in (None, "EXPLICIT"):
                raise InstanceError(
                    "distance", "a distance matrix was given, so the convention is EXPLICIT"
                )
            self.distance: str = "EXPLICIT"
        else:
            self.coords = _validate_coords(coords)
            n = self.coords.shape[0]
            distance = distance or "exact"
            if distance not in COORD_CONVENTIONS:
                raise InstanceError(
                    "distance",
                    f"unknown distance convention {distance!r}; use one of "
                    f"{', '.join(COORD_CONVENTIONS)} (or give a distance_matrix)",
                )
            self.distance = distance
        if n < self.min_nodes:
            raise InstanceError(
                "coords" if self.matrix is None else "distance_matrix",
                f"a {self.problem.upper()} needs at least {self.min_nodes} nodes, got {n}",
            )
        self.n = n
        self.node_ids = _validate_ids(node_ids, n)
        self._tree: Any = None
        self._near: dict[int, np.ndarray] = {}  # nearest_neighbours by k

    def coordinates_mismatch(self, samples: int = 100_000) -> float | None:
        """How far an explicit matrix is from its coordinates' straight-line distances, at
        the best scale: mean |m − c·e| / mean m over sampled pairs (0 when the matrix is
        Euclidean, a few 0.1% when rounded). None unless both are given. Solvers that read
        only the coordinates would optimize another objective when it is large."""
        if self.matrix is None or self.coords is None:
            return None
        rng = np.random.default_rng(0)
        a = rng.integers(0, self.n, samples)
        b = rng.integers(0, self.n, samples)
        keep = a != b
        a, b = a[keep], b[keep]
        m = self.matrix[a, b].astype(np.float64)
        e = coordinate_distance(self.coords[a], self.coords[b], "exact")
        if m.size == 0 or float(m.mean()) <= 0:
            return None if m.size == 0 else float(e.mean() > 0)
        c = float((m * e).sum() / max(float((e * e).sum()), 1e-300))  # least squares
        return float(np.abs(m - c * e).mean() / m.mean())

    # -- distances -----------------------------------------------------------------------
    def edge_lengths(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Length of each edge a[k] -> b[k] under the instance's convention."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        if self.matrix is not None:
            return self.matrix[a, b]
        assert self.coords is not None
        return coordinate_distance(self.coords[a], self.coords[b], self.distance)

    def dense_matrix(self, limit: int = DENSE_MATRIX_LIMIT) -> np.ndarray:
        """The full N×N float matrix; refuses above ``limit`` nodes to protect memory."""
        if self.matrix is not None:
            return self.matrix
        if self.n > limit:
            raise MemoryError(f"refusing to build a dense {self.n}×{self.n} matrix")
        assert self.coords is not None
        from scipy.spatial.distance import cdist

        # the same squares as coordinate_distance, an order of magnitude faster than numpy
        # broadcasting (2,000 nodes: 16 ms against 0.14-1.4 s on a busy machine; a test
        # holds the two equal under every convention)
        c = np.asarray(self.coords, dtype=np.float64)
        return squared_to_distance(cdist(c, c, "sqeuclidean"), self.distance)

    def nearest_neighbours(self, k: int) -> np.ndarray:
        """(n, k) indices of each node's k nearest other nodes, without a dense matrix; kept
        per k (a copy is returned), since the CVRP kicks ask again every round (0.3 s at
        100,000 nodes)."""
        k = min(k, self.n - 1)
        if k not in self._near:
            self._near[k] = self._nearest_neighbours(k)
        return self._near[k].copy()

    def _nearest_neighbours(self, k: int) -> np.ndarray:
        if self.coords is not None and self.matrix is None:
            from scipy.spatial import cKDTree

            if self._tree is None:
                self._tree = cKDTree(self.coords)
            return nearest_other_points(self.coords, k, self._tree)
        m = self.dense_matrix().copy()
        np.fill_diagonal(m, np.inf)
        part = np.argpartition(m, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(m, part, axis=1).argsort(axis=1)
        return np.take_along_axis(part, order, axis=1)

    def path_cost(self, nodes: np.ndarray) -> float:
        """Length of the open path visiting ``nodes`` in order."""
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.size < 2:
            return 0.0
        return float(self.edge_lengths(nodes[:-1], nodes[1:]).sum())

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "problem": self.problem, "nodes": self.n,
                "distance": self.distance}


class TSPInstance(RoutingInstance):
    """A symmetric or asymmetric travelling-salesman instance."""

    problem: ClassVar[str] = "tsp"
    min_nodes: ClassVar[int] = 3

    def tour_cost(self, tour: Any) -> float:
        """Length of the closed tour (the edge back to the start included)."""
        t = np.asarray(tour, dtype=np.int64)
        return float(self.edge_lengths(t, np.roll(t, -1)).sum())

    def cost(self, routes: list[list[int]]) -> float:
        return self.tour_cost(routes[0])


class CVRPInstance(RoutingInstance):
    """A capacitated VRP: one depot, integer demands, one vehicle capacity, optional fleet cap."""

    problem: ClassVar[str] = "cvrp"
    min_nodes: ClassVar[int] = 2

    def __init__(
        self,
        *,
        demands: Any,
        capacity: Any,
        depot: int = 0,
        max_vehicles: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.depot = _validate_depot(depot, self.n)
        self.capacity = _validate_capacity(capacity)
        self.demands = _validate_demands(demands, self.n, self.depot, self.capacity)
        self.max_vehicles: int | None = self._validate_fleet(max_vehicles)

    def _validate_fleet(self, max_vehicles: Any) -> int | None:
        if max_vehicles is None:
            return None
        max_vehicles = _whole(max_vehicles)
        if isinstance(max_vehicles, bool) or not isinstance(max_vehicles, (int, np.integer)):
            raise InstanceError("max_vehicles", "must be a positive integer")
        if max_vehicles < 1:
            raise InstanceError("max_vehicles", f"must be at least 1, got {max_vehicles}")
        if max_vehicles > MAX_CAPACITY:
            # solvers take the fleet as a C int, so a count such as 10**30 is refused here
            raise InstanceError("max_vehicles", f"must be at most {MAX_CAPACITY} (a fleet "
                                f"above the {self.n - 1} customers changes nothing), got "
                                f"{max_vehicles}")
        need = math.ceil(int(self.demands.sum()) / self.capacity)
        if need > max_vehicles:
            raise InstanceError(
                "max_vehicles",
                f"total demand {int(self.demands.sum())} needs at least {need} vehicles of "
                f"capacity {self.capacity}, but max_vehicles is {max_vehicles}",
            )
        # no two customers above half the capacity share a vehicle (demands 4, 4, 4
        # in vehicles of 6 with two vehicles passed the bound above and ran to a 422)
        large = int(np.count_nonzero(2 * self.demands > self.capacity))
        if large > max_vehicles:
            raise InstanceError(
                "max_vehicles",
                f"{large} customers each need more than half of a vehicle's capacity "
                f"{self.capacity}, so no two share one: at least {large} vehicles, but "
                f"max_vehicles is {max_vehicles}",
            )
        return int(max_vehicles)

    def with_fleet(self, max_vehicles: int | None) -> CVRPInstance:
        """The same instance with another fleet cap (checked as the constructor checks it):
        an upload's ``max_vehicles`` form field or the CLI's ``--max-vehicles``, for files
        whose format has no fleet (CVRPLIB X) or whose VEHICLES is to be overridden."""
        fleet = self._validate_fleet(max_vehicles)
        out = copy.copy(self)
        out.max_vehicles = fleet
        return out

    @property
    def customers(self) -> np.ndarray:
        return np.delete(np.arange(self.n), self.depot)

    def vehicles_over_fleet(self, routes: Any) -> int:
        """How many more non-empty routes ``routes`` uses than ``max_vehicles`` allows (0
        without a cap), as the checker counts them."""
        used = sum(1 for r in routes if len(r))
        return max(0, used - self.max_vehicles) if self.max_vehicles is not None else 0

    def fleet_cap(self) -> int:
        """Most vehicles worth using: ``max_vehicles`` if given, never more than customers."""
        customers = self.n - 1
        return min(self.max_vehicles, customers) if self.max_vehicles else customers

    def min_vehicles(self) -> int:
        """The bin-packing lower bound ⌈Σd / Q⌉."""
        return max(1, math.ceil(int(self.demands.sum()) / self.capacity))

    def route_cost(self, route: Any) -> float:
        r = np.asarray(route, dtype=np.int64)
        if r.size == 0:
            return 0.0
        full = np.concatenate(([self.depot], r, [self.depot]))
        return self.path_cost(full)

    def cost(self, routes: list[list[int]]) -> float:
        """Total length; all routes are joined through the depot in one vectorized pass (the
        path is filled from one flat array: two small arrays per route took 4 s for the
        121,000 routes of a 1M-customer plan)."""
        sizes = np.fromiter((len(r) for r in routes), dtype=np.int64, count=len(routes))
        sizes = sizes[sizes > 0]
        if not sizes.size:
            return 0.0
        flat = np.fromiter(itertools.chain.from_iterable(routes), dtype=np.int64,
                           count=int(sizes.sum()))
        path = np.full(flat.size + sizes.size + 1, self.depot, dtype=np.int64)
        # customer j of the i-th non-empty route sits after i + 1 depot visits
        path[np.arange(flat.size) + np.repeat(np.arange(1, sizes.size + 1), sizes)] = flat
        return self.path_cost(path)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(capacity=self.capacity, depot=self.depot, max_vehicles=self.max_vehicles,
                 total_demand=int(self.demands.sum()), min_vehicles=self.min_vehicles())
        return d


class CVRPTWInstance(CVRPInstance):
    """A CVRP with time windows (Solomon's VRPTW): node i must start service within
    ``time_windows[i] = [earliest, latest]`` and takes ``service_times[i]``; the depot's window
    is the planning horizon (leave at or after its earliest, be back by its latest).

    Travel time equals the edge length under the instance's convention, as in Solomon's and
    LKH-3's definitions, so one number serves as both distance and time. A vehicle that arrives
    early waits until the window opens; the cost is the total distance only. ``scale`` records
    a source file's SCALE, already applied to coordinates, windows and service times (LKH-3's
    Solomon files: SCALE 10, so costs are in tenths), and changes no computation.
    """

    problem: ClassVar[str] = "cvrptw"

    def __init__(
        self,
        *,
        time_windows: Any,
        service_times: Any = None,
        scale: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.time_windows = validate_windows(time_windows, self.n)
        self.service_times = validate_service_times(service_times, self.n, self.depot)
        if isinstance(scale, bool) or not isinstance(scale, (int, np.integer)) or scale < 1:
            raise InstanceError("scale", f"must be a positive integer, got {scale!r}")
        self.scale = int(scale)
        #: True when every time is an integer, so arrival times are exact and compared exactly.
        self.integral_times = bool(
            _integral_distances(self)
            and np.all(self.time_windows == np.round(self.time_windows))
            and np.all(self.service_times == np.round(self.service_times))
        )
        self._check_reachable()

    @property
    def earliest(self) -> np.ndarray:
        return self.time_windows[:, 0]

    @property
    def latest(self) -> np.ndarray:
        return self.time_windows[:, 1]

    @property
    def horizon(self) -> tuple[float, float]:
        """The depot's window: when vehicles may leave and by when they must be back."""
        e, l_ = self.time_windows[self.depot]
        return float(e), float(l_)

    def time_tolerance(self) -> float:
        """Slack allowed when comparing times: none for integer data; for float data 1e-9 of
        the horizon's length, so summation order cannot make a schedule late, plus 1e-12 of
        the times' magnitude for their own rounding. (It was 1e-9 of the horizon's end: with
        times in Unix seconds, 1.7e9, a plan 1.6 s late passed.)"""
        if self.integral_times:
            return 0.0
        start, end = (float(t) for t in self.horizon)
        return 1e-9 * max(1.0, end - start) + 1e-12 * max(abs(start), abs(end))

    def _check_reachable(self) -> None:
        """Refuse a customer that no vehicle can serve: leaving the depot when it opens, the
        vehicle arrives after the customer's window closes, or cannot be back in time."""
        cust = self.customers
        if cust.size == 0:
            return
        depot = np.full(cust.size, self.depot)
        start, end = self.horizon
        tol = self.time_tolerance()
        arrive = start + self.edge_lengths(depot, cust)
        late = arrive > self.latest[cust] + tol
        if late.any():
            k = int(np.flatnonzero(late)[0])
            i = int(cust[k])
            raise InstanceError(
                f"time_windows[{i}]",
                f"customer {i} is unreachable within its window: leaving the depot at "
                f"{start:.10g}, a vehicle arrives at {arrive[k]:.10g}, "
                f"{arrive[k] - self.latest[i]:.4g} after its latest {self.latest[i]:.10g}",
            )
        back = (np.maximum(arrive, self.earliest[cust]) + self.service_times[cust]
                + self.edge_lengths(cust, depot))
        over = back > end + tol
        if over.any():
            k = int(np.flatnonzero(over)[0])
            i = int(cust[k])
            raise InstanceError(
                f"time_windows[{i}]",
                f"customer {i} is unreachable within the horizon: serving it alone, a vehicle is "
                f"back at the depot at {back[k]:.10g}, {back[k] - end:.4g} after the depot's "
                f"latest {end:.10g}",
            )

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        start, end = self.horizon
        d.update(horizon=[start, end], scale=self.scale,
                 total_service_time=float(self.service_times.sum()))
        return d


Instance = TSPInstance | CVRPInstance | CVRPTWInstance

INTEGER_CONVENTIONS = ("EUC_2D", "CEIL_2D", "FLOOR_2D", "ATT")


def integer_scale(instance: RoutingInstance, longest_edge_units: float = 1_000_000) -> float:
    """Factor that turns this instance's distances into integers for integer-only solvers.

    1 for integer conventions (and integer matrices); otherwise chosen so the longest possible
    edge is about ``longest_edge_units``, which keeps rounding error near 1e-6 relative.
    """
    if instance.distance in INTEGER_CONVENTIONS:
        return 1.0
    if instance.matrix is not None:
        m = instance.matrix
        if np.all(m == np.round(m)) and m.max() < 2**31:
            return 1.0
        longest = float(m.max()) or 1.0
    else:
        assert instance.coords is not None
        span = instance.coords.max(axis=0) - instance.coords.min(axis=0)
        longest = float(math.hypot(*span)) or 1.0
    return longest_edge_units / longest


# -- validation helpers ------------------------------------------------------------------
def _integral_distances(instance: RoutingInstance) -> bool:
    if instance.matrix is not None:
        return bool(np.all(instance.matrix == np.round(instance.matrix)))
    return instance.distance in INTEGER_CONVENTIONS


def validate_windows(windows: Any, n: int) -> np.ndarray:
    """Checked ``[earliest, latest]`` per node; the file readers check a file's own values
    with it before SCALE multiplies them."""
    _numbers(windows, "time_windows", "a time")
    arr = _floats(windows, "time_windows", "must be a list of [earliest, latest] pairs")
    if arr.ndim != 2 or arr.shape != (n, 2):
        raise InstanceError(
            "time_windows", f"needs one [earliest, latest] pair per node ({n}), got shape "
            f"{arr.shape}"
        )
    checks = [
        (~np.isfinite(arr).all(axis=1), "must be finite numbers"),
        (np.abs(arr).max(axis=1) > MAX_ABS_VALUE, f"must be within ±{MAX_ABS_VALUE:g}"),
        (arr[:, 0] < 0, "earliest must not be negative"),
        (arr[:, 0] > arr[:, 1], "earliest is after latest"),
    ]
    for mask, words in checks:
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            raise InstanceError(f"time_windows[{i}]", f"window {arr[i].tolist()}: {words}")
    return _owned(arr, windows)


def validate_service_times(service: Any, n: int, depot: int) -> np.ndarray:
    """Checked service time per node (one number: every customer's, the depot's 0)."""
    if service is None:
        return _owned(np.zeros(n))
    if isinstance(service, (str, bool)):
        raise InstanceError("service_times", f"must be a number, got {service!r}")
    _numbers(service, "service_times", "a service time")
    raw = _floats(service, "service_times", "must be a number or a list of numbers")
    if raw.ndim == 0:
        # One service time for every customer (Solomon's files give one); none at the depot.
        raw = np.full(n, float(raw))
        raw[depot] = 0.0
    if raw.ndim != 1 or raw.shape[0] != n:
        raise InstanceError(
            "service_times", f"needs one service time per node ({n}), got shape {raw.shape}"
        )
    checks = [
        (~np.isfinite(raw), "must be a finite number"),
        (raw < 0, "must not be negative"),
        (raw > MAX_ABS_VALUE, f"must be at most {MAX_ABS_VALUE:g}"),
    ]
    for mask, words in checks:
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            raise InstanceError(f"service_times[{i}]", f"service time {raw[i]:g} {words}")
    if raw[depot] != 0:
        raise InstanceError(f"service_times[{depot}]", "the depot's service time must be 0")
    return _owned(raw, service)


def _owned(arr: np.ndarray, source: Any = None) -> np.ndarray:
    """A validated array as the instance's own C-contiguous copy: an instance that
    shared the caller's float64 array would let a later change by the caller bypass
    validation and leave cached neighbour lists stale. It is copied when it
    may be the caller's memory (``source`` itself, or a view of another buffer); an array
    numpy just built from a list or by a conversion is kept as is (no second copy of a large
    matrix). Not made read-only: the numba kernels take these arrays as they are, and a
    read-only array is another type to numba, compiled again inside the first timed solve
    (the warm-ups compile for writable ones), and torch warns on every conversion."""
    if arr is source or not arr.flags.owndata or not arr.flags.c_contiguous:
        arr = np.array(arr, copy=True, order="C")
    return arr


def _floats(values: Any, field: str, message: str) -> np.ndarray:
    """``values`` as a float64 array (``message`` when they are not numbers); complex numbers
    are refused, not cut to their real parts (numpy dropped the imaginary part
    silently)."""
    try:
        arr = np.asarray(values)
        if arr.dtype.kind == "c":
            raise InstanceError(field, "must be real numbers, got complex ones")
        return np.asarray(arr, dtype=np.float64)
    except InstanceError:
        raise
    except (TypeError, ValueError):
        raise InstanceError(field, message) from None


def _whole(value: Any) -> Any:
    """A whole float (2.0) as the integer it is, as the API's JSON bodies take it (a file's
    ``"depot": 1.0`` was refused where the body took it); anything else unchanged,
    for the caller's own check."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _numbers(values: Any, field: str, what: str) -> None:
    """Refuse text ("3") and true/false among an instance's numbers, as the API's JSON bodies
    refuse them: numpy reads "3" as 3.0 and true as 1.0, so a JSON file or the CLI took what
    a body refused. One level of lists is scanned whole (demands, service times,
    ids); deeper ones (coordinates, matrices: millions of entries) by their numpy type."""
    if not isinstance(values, (list, tuple)):
        return
    for i, v in enumerate(values):
        if isinstance(v, (str, bool)):
            raise InstanceError(f"{field}[{i}]", f"{what} must be a number, got {v!r}")
        if isinstance(v, (list, tuple)) and v:
            try:
                kind = np.asarray(v).dtype.kind
            except ValueError:  # ragged: the caller's conversion names it
                return
            if kind in "USOb":  # text, or only true/false, in the row
                j = next((j for j, w in enumerate(v) if isinstance(w, (str, bool))), None)
                if j is not None:
                    raise InstanceError(f"{field}[{i}][{j}]",
                                        f"{what} must be a number, got {v[j]!r}")


def _validate_coords(coords: Any) -> np.ndarray:
    _numbers(coords, "coords", "a coordinate")
    arr = _floats(coords, "coords", "must be a list of [x, y] number pairs")
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InstanceError(
            "coords", f"must be a list of [x, y] pairs, got an array of shape {arr.shape}"
        )
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InstanceError(
            f"coords[{i}]", f"coordinates must be finite numbers, got {arr[i].tolist()}"
        )
    far = np.abs(arr).max(axis=1) > MAX_ABS_VALUE
    if far.any():
        i = int(np.flatnonzero(far)[0])
        raise InstanceError(
            f"coords[{i}]", f"coordinates must be within ±{MAX_ABS_VALUE:g}; rescale the instance"
        )
    return _owned(arr, coords)


def _validate_matrix(matrix: Any) -> np.ndarray:
    _numbers(matrix, "distance_matrix", "a distance")
    arr = _floats(matrix, "distance_matrix",
                  "must be a square list of lists of numbers (rows of equal length)")
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InstanceError("distance_matrix", f"must be square, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise InstanceError(f"distance_matrix[{i}][{j}]", "distances must be finite numbers")
    big = arr > MAX_ABS_VALUE
    if big.any():
        i, j = (int(v) for v in np.argwhere(big)[0])
        raise InstanceError(
            f"distance_matrix[{i}][{j}]", f"distances must be at most {MAX_ABS_VALUE:g}; rescale"
        )
    neg = arr < 0
    if neg.any():
        i, j = (int(v) for v in np.argwhere(neg)[0])
        raise InstanceError(
            f"distance_matrix[{i}][{j}]", f"distances must be non-negative, got {arr[i, j]}"
        )
    return _owned(arr, matrix)


def _validate_ids(node_ids: Any, n: int) -> np.ndarray | None:
    if node_ids is None:
        return None
    if isinstance(node_ids, (str, bytes, dict)) or not hasattr(node_ids, "__iter__"):
        # a scalar (node_ids=5) is refused with its field, not a bare TypeError from list(5)
        raise InstanceError("ids", f"must be a list of {n} integers, got "
                            f"{type(node_ids).__name__} {node_ids!r:.60}")
    ids = list(node_ids)
    if len(ids) != n:
        raise InstanceError("ids", f"{len(ids)} ids for {n} nodes")
    seen: dict[Any, int] = {}
    ids = [_whole(v) for v in ids]
    for i, v in enumerate(ids):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InstanceError(f"ids[{i}]", f"ids must be integers, got {v!r}")
        if not -(2**63) <= v < 2**63:
            raise InstanceError(f"ids[{i}]", "ids must fit a signed 64-bit integer")
        if v in seen:
            raise InstanceError(f"ids[{i}]", f"duplicate id {v} (also at ids[{seen[v]}])")
        seen[v] = i
    return _owned(np.asarray(ids, dtype=np.int64))


def _validate_depot(depot: Any, n: int) -> int:
    depot = _whole(depot)
    if isinstance(depot, bool) or not isinstance(depot, (int, np.integer)):
        raise InstanceError("depot", f"must be a node index, got {depot!r}")
    if not 0 <= depot < n:
        raise InstanceError("depot", f"must be a node index in [0, {n - 1}], got {depot}")
    return int(depot)


def _validate_capacity(capacity: Any) -> int:
    if isinstance(capacity, bool):
        raise InstanceError("capacity", "must be a positive integer")
    if isinstance(capacity, float) and capacity.is_integer():
        capacity = int(capacity)
    if not isinstance(capacity, (int, np.integer)) or capacity <= 0:
        raise InstanceError("capacity", f"must be a positive integer, got {capacity!r}")
    if capacity > MAX_CAPACITY:
        raise InstanceError(
            "capacity", f"must be at most {MAX_CAPACITY}; rescale the capacity and demands"
        )
    return int(capacity)


def _validate_demands(demands: Any, n: int, depot: int, capacity: int) -> np.ndarray:
    _numbers(demands, "demands", "a demand")
    raw = _floats(demands, "demands", "must be a list of integers")
    if raw.ndim != 1 or raw.shape[0] != n:
        raise InstanceError("demands", f"needs one demand per node ({n}), got shape {raw.shape}")
    if np.isfinite(raw[depot]) and raw[depot] != 0:
        # before the capacity check, which a depot demand above the capacity also fails
        raise InstanceError(f"demands[{depot}]", "the depot's demand must be 0")
    checks = [
        (~np.isfinite(raw), "must be a finite integer"),
        (raw < 0, "must not be negative"),
        (raw != np.round(raw), "must be an integer"),
        (raw > capacity, f"exceeds the vehicle capacity {capacity}"),
    ]
    for mask, words in checks:
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            raise InstanceError(f"demands[{i}]", f"demand {raw[i]:g} {words}")
    if raw[depot] != 0:
        raise InstanceError(f"demands[{depot}]", "the depot's demand must be 0")
    return _owned(raw.astype(np.int64))


def nearest_other_points(coords: np.ndarray, k: int, tree: Any = None) -> np.ndarray:
    """(n, k) indices of each point's k nearest other points, by a k-d tree (``tree``: one
    already built over ``coords``). With duplicate points a point itself may come back in
    any column, so it is dropped wherever it is."""
    from scipy.spatial import cKDTree

    n = len(coords)
    if tree is None:
        tree = cKDTree(coords)
    _, idx = tree.query(coords, k=k + 1, workers=-1)
    idx = np.asarray(idx, dtype=np.int64).reshape(n, k + 1)
    order = np.argsort(idx == np.arange(n)[:, None], axis=1, kind="stable")[:, :k]
    return np.take_along_axis(idx, order, axis=1)
