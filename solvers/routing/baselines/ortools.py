"""OR-Tools routing baselines for TSP, CVRP and CVRPTW.

A first solution plus guided local search (GLS) under a wall-clock limit. The model is built
one of two ways, by size:

* up to ``DENSE_LIMIT`` nodes, an integer distance matrix registered with OR-Tools (fastest
  per evaluation; 3,000² ints is ~70 MB inside OR-Tools);
* above it, a Python distance callback over coordinates, so no N×N matrix exists anywhere,
  and the first solution comes from our KD-tree nearest-neighbour construction, because
  OR-Tools' own first-solution strategies scan all N² arcs (70 s at 13.5K nodes, measured).
  The Lin-Kernighan operator is switched off there for the same reason.

Costs are integers inside OR-Tools. Integer conventions (EUC_2D, CEIL_2D, ATT) are used as is;
float distances are scaled so the longest possible edge is about 10⁶ units, and the scale is
recorded in the statistics. The reported cost is always recomputed by the instance itself.
GLS never stops on its own, so the time limit is what ends a run; OR-Tools has no random seed
in routing search, so the seed is only recorded (its moves do not depend on chance, but where
the time limit stops it does depend on the machine's speed, so runs may differ).

A CVRPTW adds a time dimension: transit i -> j is the service time at i plus the travel time,
slack is waiting (up to the horizon), each node's cumul (its service start) is bounded by its
window, and every vehicle leaves and returns within the depot's window. Times are integers
(``solvers.routing.classical.timewindows``). Under a tight fleet PATH_CHEAPEST_ARC alone finds no
first solution on Solomon instances (measured: none on all six in 3 s), so each customer may
be dropped at a penalty far above any detour; the search then inserts them all when it can,
and a customer still dropped at the time limit makes the returned solution infeasible.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from solvers.contract import (
    INCUMBENT_EVERY_S,
    INCUMBENT_MAX_NODES,
    Budget,
    Clock,
    ProgressCallback,
    ProgressEvent,
    no_progress,
)
from solvers.errors import NoSolutionError
from solvers.routing.baselines.limits import ORTOOLS_DENSE_LIMIT as DENSE_LIMIT
from solvers.routing.baselines.limits import ORTOOLS_NATIVE_LIMIT as NATIVE_FIRST_SOLUTION_LIMIT
from solvers.routing.classical.fleet import fleet_for
from solvers.routing.classical.timewindows import (
    check_integer_reachable,
    integer_times,
    integer_travel,
    time_scale,
    time_window_routes,
)
from solvers.routing.problem import (
    CVRPInstance,
    CVRPTWInstance,
    Instance,
    TSPInstance,
    integer_scale,
)
from solvers.routing.solution import Solution, build_solution

#: Seconds past the search's own time limit at which our stop check (``CustomLimit``) ends
#: the search; OR-Tools' limit normally ends it first.
OVERRUN_GRACE = 0.1
def _pywrapcp() -> Any:
    from ortools.constraint_solver import pywrapcp

    return pywrapcp


class _Model:
    """Builds the routing model, its cost evaluator and (for large N) the first solution."""

    def __init__(self, instance: Instance, num_vehicles: int) -> None:
        pywrapcp = _pywrapcp()
        self.instance = instance
        self.scale = integer_scale(instance)
        self.dense = instance.n <= DENSE_LIMIT or instance.matrix is not None
        depot = instance.depot if isinstance(instance, CVRPInstance) else 0
        self.manager = pywrapcp.RoutingIndexManager(instance.n, num_vehicles, depot)
        self.routing = pywrapcp.RoutingModel(self.manager)
        if self.dense:
            m = np.floor(instance.dense_matrix() * self.scale + 0.5).astype(np.int64)
            self.transit = self.routing.RegisterTransitMatrix(m.tolist())
        else:
            self.transit = self.routing.RegisterTransitCallback(self._distance_callback())
        self.routing.SetArcCostEvaluatorOfAllVehicles(self.transit)

    def _distance_callback(self) -> Any:
        inst = self.instance
        assert inst.coords is not None
        # Index -> node through a plain list: the manager's method costs a C++ round trip.
        node_of = [self.manager.IndexToNode(i) for i in range(self.routing.Size() +
                                                              self.routing.vehicles())]
        xs = inst.coords[:, 0].tolist()
        ys = inst.coords[:, 1].tolist()
        scale = self.scale
        sqrt, ceil = math.sqrt, math.ceil
        kind = inst.distance

        if kind == "EUC_2D":
            def dist(a: int, b: int) -> int:
                i, j = node_of[a], node_of[b]
                return int(sqrt((xs[i] - xs[j]) ** 2 + (ys[i] - ys[j]) ** 2) + 0.5)
        elif kind == "FLOOR_2D":
            def dist(a: int, b: int) -> int:
                i, j = node_of[a], node_of[b]
                return int(sqrt((xs[i] - xs[j]) ** 2 + (ys[i] - ys[j]) ** 2))
        elif kind == "CEIL_2D":
            def dist(a: int, b: int) -> int:
                i, j = node_of[a], node_of[b]
                return ceil(sqrt((xs[i] - xs[j]) ** 2 + (ys[i] - ys[j]) ** 2))
        elif kind == "ATT":
            def dist(a: int, b: int) -> int:
                i, j = node_of[a], node_of[b]
                r = sqrt(((xs[i] - xs[j]) ** 2 + (ys[i] - ys[j]) ** 2) / 10.0)
                t = int(r + 0.5)
                return t + 1 if t < r else t
        else:
            def dist(a: int, b: int) -> int:
                i, j = node_of[a], node_of[b]
                return int(sqrt((xs[i] - xs[j]) ** 2 + (ys[i] - ys[j]) ** 2) * scale + 0.5)

        return dist


class _Progress:
    """At-solution callback: reports improving solutions and honours cancellation.

    It runs inside OR-Tools' C++ search, which swallows a Python exception raised there (a
    progress callback's error was lost and the solve went on); so an exception is kept in
    ``error``, the search's stop check ends the search on it, and ``solve`` raises it once
    the search has returned, as every other solver propagates it."""

    def __init__(self, model: _Model, clock: Clock, progress: ProgressCallback,
                 name: str, cvrp: bool = True, publish: bool = False) -> None:
        self._routing = weakref.ref(model.routing)
        self._manager = model.manager
        self.cvrp = cvrp
        #: attach the improving plan's routes to events (small enough instances only)
        self.publish = publish
        self._last_routes = -math.inf
        self.clock = clock
        self.progress = progress
        self.name = name
        self.scale = model.scale
        self.solutions = 0
        self.best = math.inf
        self.first_solution_time: float | None = None
        self._last_report = -1.0
        self.error: BaseException | None = None

    def __call__(self) -> None:
        if self.error is not None:
            return
        try:
            self._report()
        except BaseException as exc:  # kept, raised after the search (see above)
            self.error = exc

    def _report(self) -> None:
        routing = self._routing()
        if routing is None:
            return
        self.solutions += 1
        cost = routing.CostVar().Value() / self.scale
        if self.first_solution_time is None:
            self.first_solution_time = self.clock.elapsed
        improved = cost < self.best
        self.best = min(self.best, cost)
        now = self.clock.elapsed
        # Improvements at most every 0.2 s; otherwise a heartbeat every second.
        if now - self._last_report >= (0.2 if improved else 1.0):
            self._last_report = now
            routes = None
            if improved and self.publish and now - self._last_routes >= INCUMBENT_EVERY_S:
                self._last_routes = now
                routes = self._routes(routing)
            self.progress(ProgressEvent(self.name, now, self.solutions, self.best,
                                        "searching (OR-Tools integer cost, rescaled)",
                                        routes=routes))

    def _routes(self, routing: Any) -> list[list[int]]:
        """The solution just found, read from the search's bound variables (the assignment
        ``_extract`` reads exists only once the search returns)."""
        routes: list[list[int]] = []
        for v in range(routing.vehicles()):
            idx = routing.Start(v)
            route = [] if self.cvrp else [self._manager.IndexToNode(idx)]
            idx = routing.NextVar(idx).Value()
            while not routing.IsEnd(idx):
                route.append(self._manager.IndexToNode(idx))
                idx = routing.NextVar(idx).Value()
            if route:
                routes.append(route)
        return routes if self.cvrp else routes[:1]


def first_fit_vehicles(instance: CVRPInstance) -> int:
    """Vehicles that first-fit decreasing packs the demands into: a count that is feasible
    for capacity (within 11/9 of the fewest plus one)."""
    demands = np.delete(np.asarray(instance.demands, dtype=np.int64), instance.depot)
    remaining = np.empty(0, dtype=np.int64)
    for d in np.sort(demands)[::-1]:
        fits = np.flatnonzero(remaining >= d)
        if fits.size:
            remaining[fits[0]] -= d
        else:
            remaining = np.append(remaining, instance.capacity - d)
    return int(remaining.size)


class ORToolsSolver:
    """OR-Tools routing: PATH_CHEAPEST_ARC (or our nearest neighbour) + guided local search."""

    name = "ortools"

    def warm_up(self) -> None:
        """Import OR-Tools' routing library before a clock starts: imported inside the first
        solve, it took 0.1–0.3 s of that solve's time limit (in the CLI's compare
        at 0.5 s OR-Tools searched 0.22 s while the other solvers, warmed, searched nearly
        all of theirs)."""
        _pywrapcp()
        from ortools.constraint_solver import routing_enums_pb2  # noqa: F401

    def solve(
        self, instance: Instance, budget: Budget, progress: ProgressCallback = no_progress
    ) -> Solution:
        clock = Clock(budget)
        cvrp = isinstance(instance, CVRPInstance)
        initial = _initial_routes(instance, clock.expired)
        num_vehicles = self._fleet(instance, initial)
        model = _Model(instance, num_vehicles)
        routing, manager = model.routing, model.manager
        if cvrp:
            assert isinstance(instance, CVRPInstance)
            _add_capacity(model, instance, num_vehicles)
        tw_stats: dict[str, Any] = {}
        if isinstance(instance, CVRPTWInstance):
            tw_stats = self._add_time_windows(model, instance, num_vehicles)
        params = _search_parameters(model)
        watcher = _Progress(model, clock, progress, self.name, cvrp,
                            publish=instance.n <= INCUMBENT_MAX_NODES)
        routing.AddAtSolutionCallback(watcher)
        # Checked by the search itself between moves, so cancelling works even while
        # no new solution is being found. It also holds the time limit: OR-Tools' own
        # limit checks the clock only every so many calls and guided local search has been
        # reported to run minutes past it (google/or-tools#2660).
        deadline = [math.inf]  # the search's end, set once building time is known

        def stop() -> bool:
            return (budget.cancelled() or clock.elapsed > deadline[0]
                    or watcher.error is not None)

        routing.AddSearchMonitor(routing.solver().CustomLimit(stop))
        if initial is not None:
            # Provisional limit (GLS without one makes OR-Tools warn); the real one is set
            # below, once building time is known.
            params.time_limit.FromMilliseconds(int(budget.time_limit * 1000))
            routing.CloseModelWithParameters(params)
            start = routing.ReadAssignmentFromRoutes(initial, True)
            if start is None and clock.remaining <= 0:  # reading it hit the time limit
                raise NoSolutionError(
                    f"building OR-Tools' model of {instance.n} nodes took "
                    f"{clock.elapsed:.1f} s, the whole time limit of {budget.time_limit:g} "
                    "s; give it more time")
            if start is None:
                raise NoSolutionError("OR-Tools rejected the nearest-neighbour start solution")
        build_time = clock.elapsed
        # The search gets what is left after building, less a margin for extracting and
        # checking the routes afterwards (about 10 µs per node, measured at 100K nodes).
        search_s = max(0.05, clock.remaining - min(0.5, 0.02 * budget.time_limit)
                       - 1e-5 * instance.n)
        params.time_limit.FromMilliseconds(int(search_s * 1000))
        deadline[0] = build_time + search_s + OVERRUN_GRACE
        if initial is not None:
            assignment = routing.SolveFromAssignmentWithParameters(start, params) or start
        else:
            assignment = routing.SolveWithParameters(params)
        search_time = clock.elapsed - build_time
        if watcher.error is not None:
            raise watcher.error
        status_name = _status_name(routing.status())
        if assignment is None and budget.cancelled():
            # cancelled before the search's first solution (ROUTING_FAIL, which would read
            # as "more time is unlikely to help"): every other solver returns a plan
            return self._cancelled_plan(instance, budget, clock, progress, status_name)
        if assignment is None:
            raise _no_solution(instance, budget, status_name)
        routes = self._extract(routing, manager, assignment, num_vehicles, cvrp)
        if tw_stats and instance.n > 1 and not any(routes) and budget.cancelled():
            # the same, where the first answer dropped every customer (CVRPTW)
            return self._cancelled_plan(instance, budget, clock, progress, status_name)
        if tw_stats and instance.n > 1 and not any(routes):
            # with droppable customers the search's first answer may drop them all (1,000
            # nodes at 0.05 s): no solution, not one with a NaN cost and no routes
            raise NoSolutionError(
                f"OR-Tools found no solution within {budget.time_limit:g} s (status "
                f"{status_name}; every customer still dropped); give it more time")
        stats: dict[str, Any] = {
            "seed": budget.seed,
            "seed_note": ("OR-Tools routing search has no random seed; the seed is recorded "
                          "only. Where the time limit stops it depends on the machine's "
                          "speed, so two runs may differ"),
            "first_solution": "nearest_neighbor" if initial is not None else "PATH_CHEAPEST_ARC",
            "metaheuristic": "GUIDED_LOCAL_SEARCH",
            "model": "dense_matrix" if model.dense else "distance_callback",
            "integer_scale": model.scale,
            "vehicles_available": num_vehicles,
            "solutions_seen": watcher.solutions,
            "first_solution_time": watcher.first_solution_time,
            "build_time": round(build_time, 4),
            "search_time_limit": round(search_s, 3),
            "search_time": round(search_time, 3),
            "status": status_name,
            "internal_objective": assignment.ObjectiveValue(),
            **tw_stats,
        }
        if tw_stats:
            stats["dropped_customers"] = instance.n - 1 - sum(len(r) for r in routes)
        sol = build_solution(instance, routes, solver=self.name, wall_time=clock.elapsed,
                             stats=stats)
        progress(ProgressEvent(self.name, clock.elapsed, watcher.solutions, sol.cost, "done"))
        return sol

    def _cancelled_plan(self, instance: Instance, budget: Budget, clock: Clock,
                        progress: ProgressCallback, status_name: str) -> Solution:
        """The greedy construction ``nearest_neighbor`` builds (soonest-service routes for
        CVRPTW), for a solve cancelled before the search found a solution; a
        NoSolutionError saying so when that plan breaks the fleet cap."""
        from solvers.routing.classical.construct import (  # numba kernels, as in _initial_routes
            nearest_neighbour_routes,
            nearest_neighbour_tour,
        )

        if isinstance(instance, CVRPTWInstance):
            routes = time_window_routes(instance)
        elif isinstance(instance, CVRPInstance):
            routes = nearest_neighbour_routes(instance)
        else:
            assert isinstance(instance, TSPInstance)
            routes = [nearest_neighbour_tour(instance)]
        if isinstance(instance, CVRPInstance) and instance.vehicles_over_fleet(routes):
            raise NoSolutionError(
                f"OR-Tools was cancelled before its search found a solution, and the greedy "
                f"construction used instead needs {sum(1 for r in routes if r)} vehicles, "
                f"more than max_vehicles ({instance.max_vehicles})",
                field="max_vehicles", more_time_helps=False)
        stats = {"seed": budget.seed, "status": status_name,
                 "first_solution": "nearest_neighbor",
                 "cancelled": "before the search found a solution: the greedy construction "
                              "(nearest neighbour; soonest-service routes with time windows)"}
        sol = build_solution(instance, routes, solver=self.name, wall_time=clock.elapsed,
                             stats=stats)
        progress(ProgressEvent(self.name, clock.elapsed, 0, sol.cost, "done (cancelled)"))
        return sol

    @staticmethod
    def _add_time_windows(model: _Model, instance: CVRPTWInstance,
                          vehicles: int) -> dict[str, Any]:
        """The time dimension (service start within each window, waiting as slack) and a
        drop penalty per customer, so a first solution always exists under a tight fleet;
        a customer still dropped at the time limit leaves the solution infeasible."""
        routing, manager = model.routing, model.manager
        scale = time_scale(instance, model.scale)
        times = integer_times(instance, scale)
        dist = instance.dense_matrix()
        travel = integer_travel(dist, instance, scale)
        check_integer_reachable(instance, times, travel[instance.depot],
                                travel[:, instance.depot], "ortools")
        transit = times.service[:, None] + travel
        horizon = max(times.horizon, int(times.windows[instance.depot, 1]))
        routing.AddDimension(routing.RegisterTransitMatrix(transit.tolist()), horizon, horizon,
                             False, "Time")
        dim = routing.GetDimensionOrDie("Time")
        # Far above any detour, so the search drops a customer only when it cannot fit it.
        penalty = 100 * max(1, int(np.ceil(float(dist.max()) * model.scale)))
        for node in range(instance.n):
            if node == instance.depot:
                continue
            index = manager.NodeToIndex(node)
            dim.CumulVar(index).SetRange(int(times.windows[node, 0]),
                                         int(times.windows[node, 1]))
            routing.AddDisjunction([index], penalty)
        e0, l0 = (int(t) for t in times.windows[instance.depot])
        for v in range(vehicles):
            dim.CumulVar(routing.Start(v)).SetRange(e0, l0)
            dim.CumulVar(routing.End(v)).SetRange(e0, l0)
        return {"time_scale": scale, "drop_penalty": penalty}

    @staticmethod
    def _fleet(instance: Instance, initial: list[list[int]] | None) -> int:
        if isinstance(instance, CVRPTWInstance):
            unlimited = instance.max_vehicles is None
            return fleet_for(instance, len(time_window_routes(instance)) if unlimited else 0)
        if not isinstance(instance, CVRPInstance):
            return 1
        if instance.max_vehicles is not None:
            return instance.fleet_cap()
        # Enough vehicles to be feasible with slack, as in our measured baseline settings,
        # and never fewer than a packing that fits: ⌈Σd/Q⌉ is a lower bound, not enough when
        # customers do not pack (11 customers of demand 6, capacity 10: 11 routes, 9 offered,
        # and OR-Tools timed out whatever the time limit).
        packed = len(initial) if initial is not None else first_fit_vehicles(instance)
        v = max(math.ceil(1.1 * instance.min_vehicles()) + 1, packed)
        return min(v, instance.fleet_cap())

    @staticmethod
    def _extract(routing: Any, manager: Any, assignment: Any, vehicles: int,
                 cvrp: bool) -> list[list[int]]:
        routes: list[list[int]] = []
        for v in range(vehicles):
            idx = routing.Start(v)
            route: list[int] = []
            if not cvrp:
                route.append(manager.IndexToNode(idx))
            idx = assignment.Value(routing.NextVar(idx))
            while not routing.IsEnd(idx):
                route.append(manager.IndexToNode(idx))
                idx = assignment.Value(routing.NextVar(idx))
            if route:
                routes.append(route)
        return routes if cvrp else [routes[0]]


def _initial_routes(instance: Instance, stop: Callable[[], bool]) -> list[list[int]] | None:
    """The nearest-neighbour start above ``NATIVE_FIRST_SOLUTION_LIMIT`` nodes (OR-Tools'
    own first-solution strategies are quadratic), else None; ``stop`` (time up, cancel)
    finishes it the cheap way."""
    if instance.n <= NATIVE_FIRST_SOLUTION_LIMIT:
        return None
    # imported here: the construction's numba kernels are not needed to list the solvers
    from solvers.routing.classical.construct import nearest_neighbour_routes, nearest_neighbour_tour

    if isinstance(instance, CVRPInstance):
        return nearest_neighbour_routes(instance, stop=stop)
    assert isinstance(instance, TSPInstance)
    tour = nearest_neighbour_tour(instance, stop=stop)
    return [tour[1:]]  # the start node 0 is OR-Tools' depot


def _add_capacity(model: _Model, instance: CVRPInstance, num_vehicles: int) -> None:
    """The capacity dimension: every vehicle carries at most ``instance.capacity``."""
    routing, manager = model.routing, model.manager
    demands = instance.demands.tolist()
    cb = routing.RegisterUnaryTransitCallback(lambda i: demands[manager.IndexToNode(i)])
    routing.AddDimensionWithVehicleCapacity(
        cb, 0, [instance.capacity] * num_vehicles, True, "Capacity"
    )


def _search_parameters(model: _Model) -> Any:
    """Cheapest-arc start and guided local search; no Lin-Kernighan on the callback model."""
    from ortools.constraint_solver import routing_enums_pb2
    from ortools.util import optional_boolean_pb2

    params = _pywrapcp().DefaultRoutingSearchParameters()
    params.first_solution_strategy = (
        routing_enums_pb2.FirstSolutionStrategy.PATH_CHEAPEST_ARC
    )
    params.local_search_metaheuristic = (
        routing_enums_pb2.LocalSearchMetaheuristic.GUIDED_LOCAL_SEARCH
    )
    if not model.dense:
        # Lin-Kernighan builds neighbour lists from all N² arcs before the first move
        # (16M Python callbacks at 4K nodes, measured); at scale it would blow the time
        # limit several times over, so the callback model runs without it.
        params.local_search_operators.use_lin_kernighan = optional_boolean_pb2.BOOL_FALSE
    return params


def _no_solution(instance: Instance, budget: Budget, status_name: str) -> NoSolutionError:
    """Why the search returned no assignment: it ended on its own (ROUTING_FAIL: more time
    will not help; a fleet cap may be too small), or the time ran out."""
    if status_name == "ROUTING_FAIL":  # the search ended on its own, not on time
        capped = getattr(instance, "max_vehicles", None) is not None
        return NoSolutionError(
            f"OR-Tools' search ended without a solution (status {status_name}), so "
            "more time is unlikely to help"
            + ("; the fleet (max_vehicles) may be too small for these demands"
               if capped else "; try pyvrp"),
            field="max_vehicles" if capped else "solver", more_time_helps=False)
    return NoSolutionError(
        f"OR-Tools found no solution within {budget.time_limit:g} s "
        f"(status {status_name}); give it more time"
    )


def _status_name(code: int) -> str:
    try:
        from ortools.constraint_solver import routing_enums_pb2

        return routing_enums_pb2.RoutingSearchStatus.Value.Name(code)
    except Exception:
        return str(code)
