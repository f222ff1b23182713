"""PyVRP (MIT) as the second classical reference: iterated local search, state of the art on
CVRPLIB Set X, TSP as a single vehicle, and CVRPTW natively (client windows and service
durations, the depot's window as every vehicle's shift).

PyVRP works on integer dense matrices, so float distances are scaled (see
``integer_scale``) and the instance is capped at ``limits.PYVRP_MAX_NODES`` to keep the N×N
int64 matrix in memory bounds (10K nodes is 800 MB). The cost we report is recomputed by
the instance.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
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
from solvers.routing.classical.construct import nearest_neighbour_routes, nearest_neighbour_tour
from solvers.routing.classical.timewindows import (
    check_integer_reachable,
    integer_times,
    time_scale,
    time_window_routes,
)
from solvers.routing.problem import (
    CVRPInstance,
    CVRPTWInstance,
    Instance,
    TSPInstance,
    coordinate_distance,
    integer_scale,
)
from solvers.routing.solution import Solution, build_solution

#: PyVRP's cost of a solution that is not feasible is int64's maximum; anything this large is
#: that sentinel, not a cost (scaled costs stay far below it).
NO_SOLUTION_COST = 2.0**62


class _StopAndReport:
    """PyVRP stopping criterion: the time limit, cancellation, and progress every 0.25 s."""

    def __init__(self, clock: Clock, deadline: float, progress: ProgressCallback,
                 name: str, scale: float) -> None:
        self.clock = clock
        self.deadline = deadline
        self.progress = progress
        self.name = name
        self.scale = scale
        self.iterations = 0
        self._last = 0.0
        #: turns PyVRP's best solution into our routes; None: the incumbent is not published
        self.to_routes: Callable[[Any], list[list[int]]] | None = None
        self._best: Any = None  # the newest best not yet published (``on_best``)
        self._last_routes = -math.inf

    def on_best(self, best: Any) -> None:
        """PyVRP's callback on each new best: only kept here (a reference), turned into
        routes at most every ``INCUMBENT_EVERY_S`` when progress is reported."""
        if self.to_routes is not None and best.is_feasible():
            self._best = best

    def __call__(self, best_cost: float) -> bool:
        self.iterations += 1
        now = self.clock.elapsed
        if now - self._last >= 0.25:
            self._last = now
            # PyVRP reports int64's maximum while it has no feasible solution (a
            # failed job's best cost read 9.2e18)
            found = math.isfinite(best_cost) and best_cost < NO_SOLUTION_COST
            cost = best_cost / self.scale if found else None
            routes = None
            if (self._best is not None and self.to_routes is not None and found
                    and now - self._last_routes >= INCUMBENT_EVERY_S):
                routes, self._best, self._last_routes = self.to_routes(self._best), None, now
            self.progress(ProgressEvent(self.name, now, self.iterations, cost, "searching",
                                        routes=routes))
        return now >= self.deadline or self.clock.budget.cancelled()


def _routes(best: Any, order: np.ndarray, instance: Instance) -> list[list[int]]:
    """PyVRP's solution as our routes (``order`` maps its locations to our nodes)."""
    routes = [[int(order[a.idx + 1]) for a in r if a.is_client()] for r in best.routes()]
    if isinstance(instance, TSPInstance):
        routes = [[int(order[0]), *routes[0]]] if routes else [[int(order[0])]]
    return routes


def _on_best_callbacks() -> type:
    """PyVRP's callbacks class with ``on_best`` forwarded (a class made on first use: pyvrp
    is imported lazily)."""
    from pyvrp import IteratedLocalSearchCallbacks

    class OnBest(IteratedLocalSearchCallbacks):  # type: ignore[misc]
        def __init__(self, forward: Callable[[Any], None]) -> None:
            self.forward = forward

        def on_best(self, best: Any) -> None:
            self.forward(best)

    return OnBest


class PyVRPSolver:
    """PyVRP's iterated local search with its default parameters."""

    name = "pyvrp"

    def warm_up(self) -> None:
        """Import PyVRP (about 0.3 s the first time) before the first solve, as the server and
        the CLI do for every solver: its import is outside the solve's clock, but it made a
        first call take that much longer than its time limit."""
        import pyvrp  # noqa: F401

    def solve(
        self, instance: Instance, budget: Budget, progress: ProgressCallback = no_progress
    ) -> Solution:
        import pyvrp
        from pyvrp.exceptions import PenaltyBoundWarning

        # PyVRP warns (several lines on stderr, once per run) when a penalty reaches its bound
        # while solutions stay infeasible; we report infeasibility ourselves, so the warning
        # is only noise in the CLI's output (C101 printed it with both solvers at the optimum)
        warnings.filterwarnings("ignore", category=PenaltyBoundWarning)
        clock = Clock(budget)
        groups = repeated_points(instance)
        if groups is not None:
            return self._solve_distinct_points(instance, groups, budget, clock, progress)
        data, order, scale = self._problem_data(instance)
        build_time = clock.elapsed
        # Margin for extraction and PyVRP's own wrap-up (measured overshoot up to ~2% at 3K).
        deadline = budget.time_limit * 0.97 - 1e-5 * instance.n
        stop = _StopAndReport(clock, deadline, progress, self.name, scale)
        # A nearest-neighbour start: PyVRP's own start-up on a long TSP route is up to 9×
        # slower without it (measured: 30.6 s vs 3.5 s to the first iteration at 5K nodes).
        start = self._initial_solution(instance, data, order, clock.expired)
        penalty = load_penalty_params(instance, data)
        if instance.n <= INCUMBENT_MAX_NODES:
            stop.to_routes = lambda best: _routes(best, order, instance)
        callbacks = _on_best_callbacks()(stop.on_best)
        result = pyvrp.solve(data, stop=stop, seed=budget.seed, collect_stats=False,
                             display=False, initial_solution=start,
                             params=pyvrp.SolveParams(
                                 penalty=penalty,
                                 ils=pyvrp.IteratedLocalSearchParams(callbacks=callbacks)))
        best = result.best
        if not best.is_feasible():
            fleet = getattr(instance, "max_vehicles", None)
            raise NoSolutionError(
                f"PyVRP found no feasible solution within {budget.time_limit:g} s"
                + (f" with at most {fleet} vehicle{'s' if fleet != 1 else ''}: the fleet "
                   "(max_vehicles) may be too small "
                   "for these demands and windows, or it needs more time" if fleet is not None
                   else "; give it more time"))
        routes = _routes(best, order, instance)
        stats: dict[str, Any] = {
            "seed": budget.seed,
            "seed_note": ("the seed fixes PyVRP's random choices; how many iterations the time "
                          "limit allows depends on the machine's speed, so two runs may differ"),
            "iterations": int(result.num_iterations),
            "integer_scale": scale,
            "internal_objective": int(result.cost()),
            "max_penalty": penalty.max_penalty,
            "build_time": round(build_time, 4),
            "pyvrp_version": pyvrp.__version__ if hasattr(pyvrp, "__version__") else "0.14",
        }
        sol = build_solution(instance, routes, solver=self.name, wall_time=clock.elapsed,
                             stats=stats)
        progress(ProgressEvent(self.name, clock.elapsed, stop.iterations, sol.cost, "done"))
        return sol

    def _solve_distinct_points(self, instance: Instance, groups: list[list[int]],
                               budget: Budget, clock: Clock,
                               progress: ProgressCallback) -> Solution:
        """A TSP on its distinct points, each point's nodes then visited one after another:
        the same length, as they lie at distance 0 from each other (PyVRP stalled
        among zero-length ties, 200 nodes on 10 points 14 % above ``ils``)."""
        if len(groups) < 3:  # one or two places: every order of them is as short
            tour = [v for group in groups for v in group]
            stats: dict[str, Any] = {"seed": budget.seed, "iterations": 0}
        else:
            assert instance.coords is not None
            reduced = TSPInstance(name=instance.name, distance=instance.distance,
                                  coords=instance.coords[[g[0] for g in groups]])

            def spread(event: ProgressEvent) -> None:
                # the reduced instance's incumbent, on the original nodes
                routes = None if event.routes is None else [
                    [v for r in event.routes[0] for v in groups[r]]]
                progress(dataclasses.replace(event, routes=routes))

            sub = self.solve(reduced, dataclasses.replace(
                budget, time_limit=max(clock.remaining, 1e-3)), spread)
            tour = [v for r in sub.routes[0] for v in groups[r]]
            stats = dict(sub.stats)
        stats["distinct_points"] = len(groups)
        return build_solution(instance, [tour], solver=self.name, wall_time=clock.elapsed,
                              stats=stats)

    @staticmethod
    def _initial_solution(instance: Instance, data: Any, order: np.ndarray,
                          stop: Callable[[], bool]) -> Any:
        import pyvrp

        if isinstance(instance, TSPInstance):
            routes = [nearest_neighbour_tour(instance, start=int(order[0]), stop=stop)[1:]]
        elif isinstance(instance, CVRPTWInstance):
            routes = time_window_routes(instance)
            if len(routes) > instance.fleet_cap():
                return None  # a tight fleet: let PyVRP find its own way to feasibility
        else:
            assert isinstance(instance, CVRPInstance)
            routes = nearest_neighbour_routes(instance, stop=stop)
            if len(routes) > instance.fleet_cap():
                return None  # a tight fleet: let PyVRP find its own way to feasibility
        # PyVRP numbers clients 0.. in `order` after the depot.
        position = np.empty(instance.n, dtype=np.int64)
        position[order] = np.arange(instance.n)
        return pyvrp.Solution(data, [[int(position[v]) - 1 for v in r] for r in routes])

    @staticmethod
    def _problem_data(instance: Instance) -> tuple[Any, np.ndarray, float]:
        """ProblemData with the depot first (PyVRP's convention) and integer distances."""
        import pyvrp

        depot = instance.depot if isinstance(instance, CVRPInstance) else 0
        order = np.concatenate(([depot], np.delete(np.arange(instance.n), depot)))
        scale = integer_scale(instance)
        dist = _integer_matrix(instance, order, scale)
        coords = (
            instance.coords[order] if instance.coords is not None else np.zeros((instance.n, 2))
        )
        locations = [pyvrp.Location(float(x), float(y)) for x, y in coords]
        if isinstance(instance, CVRPTWInstance):
            return _time_window_data(instance, order, scale, dist, locations), order, scale
        if isinstance(instance, CVRPInstance):
            dem = instance.demands[order]
            clients = [pyvrp.Client(location=i, delivery=[int(dem[i])])
                       for i in range(1, instance.n)]
            fleet = instance.fleet_cap()
            vehicles = [pyvrp.VehicleType(num_available=fleet, capacity=[instance.capacity])]
        else:
            clients = [pyvrp.Client(location=i) for i in range(1, instance.n)]
            vehicles = [pyvrp.VehicleType(num_available=1)]
        data = pyvrp.ProblemData(
            locations=locations,
            clients=clients,
            depots=[pyvrp.Depot(location=0)],
            vehicle_types=vehicles,
            distance_matrices=[dist],
            # No time windows: durations never enter the objective, so the distance matrix is
            # reused rather than allocating a second N² array.
            duration_matrices=[dist],
        )
        return data, order, scale




def repeated_points(instance: Instance) -> list[list[int]] | None:
    """A TSP on coordinates whose points repeat, at distance 0 from each other under its
    convention: its nodes grouped by point (groups in order of first node, node 0 first);
    None otherwise (all points distinct, a matrix, a CVRP, or a convention that would put
    equal points apart)."""
    if not isinstance(instance, TSPInstance) or instance.matrix is not None \
            or instance.coords is None:
        return None
    _, first, inverse = np.unique(instance.coords, axis=0, return_index=True,
                                  return_inverse=True)
    if first.size == instance.n:
        return None
    inverse = inverse.ravel()
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)  # groups in order of their first node
    groups: list[list[int]] = [[] for _ in range(first.size)]
    for v, g in enumerate(rank[inverse].tolist()):
        groups[g].append(v)
    heads = np.array([g[0] for g in groups for _ in g[1:]], dtype=np.int64)
    others = np.array([v for g in groups for v in g[1:]], dtype=np.int64)
    if np.any(instance.edge_lengths(heads, others) != 0):
        return None
    return groups


def load_penalty_params(instance: Instance, data: Any) -> Any:
    """PyVRP's penalty parameters, with the penalty bound scaled to the distances.

    PyVRP bounds its penalty per unit of excess load at 10^5, a figure made for CVRPLIB's
    distances (edges up to about 10^3). Float distances are scaled so the longest edge is
    about 10^6, where that bound can be too low for an overload ever to cost more than the
    detour it saves: the search never left its nearest-neighbour start (the README's
    five-node CVRP 22% above the optimum; 12 collinear customers 58 against 52; a random
    12-node CVRP 3% above OR-Tools). The bound is now 100 longest edges per smallest positive
    demand when that is larger. Measured at 2 s: neutral on uniform CVRP100 (24 instances,
    +0.08% mean, better on 10, worse on 10), on the six Solomon files (identical costs) and
    on X-n101-k25 (bound 1.4·10^5 there, the same cost)."""
    import pyvrp

    default = pyvrp.PenaltyParams()
    if not isinstance(instance, CVRPInstance) or instance.n < 3:
        return default
    demands = instance.demands[instance.demands > 0]
    if demands.size == 0:
        return default
    longest = float(np.asarray(data.distance_matrix(0)).max())
    bound = 100 * longest / float(demands.min())
    if not math.isfinite(bound) or bound <= default.max_penalty:
        return default
    return pyvrp.PenaltyParams(max_penalty=bound)


def _time_window_data(instance: CVRPTWInstance, order: np.ndarray, scale: float,
                      dist: np.ndarray, locations: list[Any]) -> Any:
    """ProblemData of a CVRPTW: windows bound the start of service, durations are travel
    times (the distance matrix itself when all times are integers, else rounded up)."""
    import pyvrp

    tscale = time_scale(instance, scale)
    times = integer_times(instance, tscale)
    windows, service = times.windows[order], times.service[order]
    if instance.integral_times and tscale == 1.0 and scale == 1.0:
        durations = dist
    else:
        durations = _integer_matrix(instance, order, tscale, round_up=True)
    out, back = np.empty(instance.n, np.int64), np.empty(instance.n, np.int64)
    out[order], back[order] = durations[0], durations[:, 0]  # the depot is order[0]
    check_integer_reachable(instance, times, out, back, "pyvrp")
    dem = instance.demands[order]
    clients = [
        pyvrp.Client(location=i, delivery=[int(dem[i])], service_duration=int(service[i]),
                     tw_early=int(windows[i, 0]), tw_late=int(windows[i, 1]))
        for i in range(1, instance.n)
    ]
    e0, l0 = int(windows[0, 0]), int(windows[0, 1])
    vehicles = [pyvrp.VehicleType(num_available=instance.fleet_cap(),
                                  capacity=[instance.capacity], tw_early=e0, tw_late=l0)]
    return pyvrp.ProblemData(
        locations=locations,
        clients=clients,
        depots=[pyvrp.Depot(location=0, tw_early=e0, tw_late=l0)],
        vehicle_types=vehicles,
        distance_matrices=[dist],
        duration_matrices=[durations],
    )


def _integer_matrix(instance: Instance, order: np.ndarray, scale: float,
                    round_up: bool = False) -> np.ndarray:
    """The reordered, scaled, rounded N×N int64 matrix (to the nearest, or up for travel
    times), built in row blocks so that peak memory stays near one int64 matrix rather than
    three float copies."""
    n = instance.n
    out = np.empty((n, n), dtype=np.int64)
    block = max(1, 2_000_000 // n)
    for start in range(0, n, block):
        rows = order[start:start + block]
        if instance.matrix is not None:
            part = instance.matrix[np.ix_(rows, order)]
        else:
            assert instance.coords is not None
            c = instance.coords
            part = coordinate_distance(c[rows][:, None, :], c[order][None, :, :],
                                       instance.distance)
        out[start:start + rows.size] = (np.ceil(part * scale) if round_up
                                        else np.floor(part * scale + 0.5))
    # PyVRP refuses a matrix whose diagonal is not zero (a 500 for a user's matrix); no
    # route uses it, so zeroing it changes nothing
    np.fill_diagonal(out, 0)
    return out

