"""The ``pyvrp`` VRP solver: a VROOM document as PyVRP 0.14's problem data.

PyVRP 0.14 models most of a VROOM document directly: locations apart from depots, one vehicle
type per distinct vehicle (identical vehicles share a type, which keeps its search symmetric),
a start and an end depot per type (several depots), capacities in several dimensions, a job's
``delivery`` (loaded at the depot) and ``pickup`` (brought back) as its client's, time windows
of clients and of vehicles' shifts, shipments (pickup before delivery, one vehicle), fixed
costs, several profiles, and optional clients with prizes. How the rest is written:

* Every task is optional with a prize far above any detour, so a task that cannot be served
  is left unassigned (with a reason from the checker) instead of making the plan infeasible;
  a higher ``priority`` raises the prize (``(1 + priority)`` times the base), which favours
  serving it when not everything fits, though not as strictly as VROOM's lexicographic rule.
* A job with several time windows is a group of clients, one per window, of which at most one
  is visited (PyVRP's mutually exclusive client groups).
* The arc cost (travel time, distance or the costs matrix, per ``arcs``) is PyVRP's distance,
  so PyVRP optimises VROOM's cost. ``max_travel_time`` becomes PyVRP's ``max_distance`` on that
  matrix where the cost is travel time alone (exact); otherwise it is the shift duration,
  which also counts service and waiting, so it is stricter than asked. ``max_distance`` needs
  the distance matrix as PyVRP's distance: the travel time is then costed through PyVRP's
  duration cost, which also counts waiting and service.
* A job's ``setup`` is added to its service time (stricter than VROOM, which skips it after
  a task at the same place); a vehicle without a start or an end starts or ends at a dummy
  location at no distance from everything.

Skills, breaks and ``max_tasks`` are not expressible, so the registry refuses such documents
for this solver. Vehicles' ``steps`` are its starting solution (moved freely: pinned steps are
refused, for the ``warmstart`` solver). The checker recomputes every time, load and cost of
the plan it returns.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.contract import Budget, Clock, ProgressEvent
from solvers.routing.vrp.arcs import arc_costs, distances, durations, fleet_costs, profile_key
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.plan import RoutePlan, TaskRef, VrpPlan, complete_plan
from solvers.routing.vrp.warmstart import refuse_pinned, starting_solution

NAME = "pyvrp"
#: The parts of a document this solver takes (see ``solve.features_of``).
FEATURES = frozenset({"time_windows", "shipments", "multi_depot", "heterogeneous",
                      "max_travel_time", "max_distance", "costs", "priority", "warm_start"})
#: PyVRP's "no solution yet" cost is int64's maximum.
_NO_COST = 2 ** 62
_INF = np.iinfo(np.int64).max


@dataclass
class _Data:
    """PyVRP's problem data and the maps back to the document."""

    data: Any
    clients: list[TaskRef]
    type_vehicles: list[list[int]]
    divisor: int
    prize: int
    notes: list[str] = field(default_factory=list)


def _locations(problem: VrpProblem) -> int:
    first = next(iter(problem.matrices.values()))
    return int(np.asarray(first.durations).shape[0])


def _with_dummy(m: np.ndarray, dummy: bool) -> np.ndarray:
    """The matrix with a zero diagonal (PyVRP refuses any other; no route uses it) and, for
    open routes, a last row and column of zeros for the dummy location."""
    n = m.shape[0]
    out = np.zeros((n + 1, n + 1) if dummy else (n, n), dtype=np.int64)
    out[:n, :n] = m
    np.fill_diagonal(out, 0)
    return out


def _windows(windows: Any) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in windows] if windows else [(0, int(_INF))]


def build(problem: VrpProblem) -> _Data:
    """PyVRP's ProblemData for ``problem`` (see the module's docstring for the mapping)."""
    import pyvrp

    n = _locations(problem)
    dummy = any(v.start_index is None or v.end_index is None for v in problem.vehicles)
    costs, divisor = fleet_costs(problem)
    dims = problem.amount_size

    # Profiles: one PyVRP profile per distinct (arc costs, travel times) and distance mode.
    profiles: dict[tuple, int] = {}
    dist_mats: list[np.ndarray] = []
    dur_mats: list[np.ndarray] = []
    longest = 1
    vtypes: dict[tuple, list[int]] = {}
    type_args: dict[tuple, dict[str, Any]] = {}
    depots: dict[int, int] = {}
    depot_list: list[Any] = []

    def depot(loc: int | None) -> int:
        key = n if loc is None else int(loc)
        if key not in depots:
            depots[key] = len(depot_list)
            depot_list.append(pyvrp.Depot(location=key))
        return depots[key]

    notes: list[str] = []
    for vi, v in enumerate(problem.vehicles):
        cost = costs[vi]
        use_distance = v.max_distance is not None and distances(problem, v) is not None
        key = (*profile_key(problem, v, cost), use_distance)
        if key not in profiles:
            profiles[key] = len(dist_mats)
            dur = _with_dummy(durations(problem, v), dummy)
            if use_distance:
                slot = _with_dummy(distances(problem, v), dummy)  # type: ignore[arg-type]
            else:
                slot = _with_dummy(arc_costs(problem, v, cost), dummy)
            dist_mats.append(slot)
            # the same array when equal (the default cost is the travel time)
            dur_mats.append(slot if np.array_equal(dur, slot) else dur)
            longest = max(longest, int(slot.max()) if slot.size else 1)
        args: dict[str, Any] = {
            "capacity": [int(c) for c in v.capacity] + [0] * (dims - len(v.capacity)),
            "start_depot": depot(v.start_index), "end_depot": depot(v.end_index),
            "fixed_cost": cost.fixed, "profile": profiles[key],
        }
        if v.time_window is not None:
            args["tw_early"], args["tw_late"] = int(v.time_window[0]), int(v.time_window[1])
        if use_distance:
            args.update(unit_distance_cost=cost.per_distance,
                        unit_duration_cost=cost.per_duration, max_distance=int(v.max_distance))
            if cost.per_duration:
                notes.append(f"vehicle {v.id}: travel time costed as route duration "
                             "(waiting and service included), since max_distance needs "
                             "PyVRP's distance")
        else:
            args["unit_distance_cost"] = 1
        if v.max_travel_time is not None:
            exact = not use_distance and cost.per_distance == 0 and cost.per_custom == 0 \
                and cost.per_duration > 0
            if exact:
                args["max_distance"] = int(v.max_travel_time) * cost.per_duration
            else:
                args["shift_duration"] = int(v.max_travel_time)
                notes.append(f"vehicle {v.id}: max_travel_time held as a shift duration "
                             "(service and waiting included: stricter)")
        tkey = tuple(sorted((k, tuple(a) if isinstance(a, list) else a)
                            for k, a in args.items()))
        vtypes.setdefault(tkey, []).append(vi)
        type_args[tkey] = args
    vehicle_types = [pyvrp.VehicleType(num_available=len(vs), **type_args[k])
                     for k, vs in vtypes.items()]

    fixed_max = max([c.fixed for c in costs] or [0])
    prize = 2 * longest + fixed_max + 1
    clients, refs, groups, shipments = _tasks(problem, dims, prize)
    locations = [pyvrp.Location(0.0, 0.0) for _ in range(n + (1 if dummy else 0))]
    if problem.locations is not None:
        for i, xy in enumerate(problem.locations):
            if xy is not None:
                locations[i] = pyvrp.Location(float(xy[0]), float(xy[1]))
    data = pyvrp.ProblemData(locations=locations, clients=clients, depots=depot_list,
                             vehicle_types=vehicle_types, distance_matrices=dist_mats,
                             duration_matrices=dur_mats, groups=groups, shipments=shipments)
    return _Data(data, refs, list(vtypes.values()), divisor, prize, notes)


def _tasks(problem: VrpProblem, dims: int,
           prize: int) -> tuple[list[Any], list[TaskRef], list[Any], list[Any]]:
    """PyVRP's clients (one per job and time window), their jobs, the groups of a job's
    windows, and the shipments."""
    import pyvrp

    clients: list[Any] = []
    refs: list[TaskRef] = []
    groups: list[Any] = []

    def amounts(vec: Any) -> list[int]:
        vec = [int(a) for a in (vec or ())]
        return vec + [0] * (dims - len(vec))

    for ji, job in enumerate(problem.jobs):
        windows = _windows(job.time_windows)
        members = []
        for early, late in windows:
            members.append(len(clients))
            clients.append(pyvrp.Client(
                location=int(job.location_index), delivery=amounts(job.delivery),
                pickup=amounts(job.pickup),
                service_duration=int(job.service) + int(job.setup or 0),
                tw_early=early, tw_late=late, prize=prize * (1 + int(job.priority or 0)),
                required=False, group=len(groups) if len(windows) > 1 else None))
            refs.append(TaskRef("job", ji))
        if len(windows) > 1:
            groups.append(pyvrp.ClientGroup(members, required=False))

    shipments = []
    for s in problem.shipments:
        p, d = s.pickup, s.delivery
        (pe, pl), (de, dl) = _single_window(p.time_windows), _single_window(d.time_windows)
        shipments.append(pyvrp.Shipment(
            pickup_location=int(p.location_index), delivery_location=int(d.location_index),
            pickup_tw_early=pe, pickup_tw_late=pl,
            pickup_service_duration=int(p.service) + int(p.setup or 0),
            delivery_tw_early=de, delivery_tw_late=dl,
            delivery_service_duration=int(d.service) + int(d.setup or 0),
            # two tasks, as VROOM counts them: twice a job's prize
            amount=amounts(s.amount), prize=2 * prize * (1 + int(s.priority or 0)),
            required=False))
    return clients, refs, groups, shipments


def _single_window(windows: Any) -> tuple[int, int]:
    """A shipment step's one window; PyVRP has no groups of shipments, so a step with
    several windows is refused by ``supports``."""
    return _windows(windows)[0]


def supports(problem: VrpProblem) -> str | None:
    """Why this solver cannot take ``problem`` beyond its features (None when it can)."""
    pinned = refuse_pinned(problem, NAME)
    if pinned is not None:
        return pinned
    for i, s in enumerate(problem.shipments):
        for side in ("pickup", "delivery"):
            if len(getattr(s, side).time_windows or ()) > 1:
                return (f"shipments[{i}].{side}.time_windows: PyVRP takes one time window "
                        "per shipment step")
    return None


class _Stop:
    """PyVRP's stopping criterion: the deadline, the cancel flag, an iteration budget, and
    progress every 0.25 s."""

    def __init__(self, clock: Clock, deadline: float, iterations: int | None,
                 progress: Callable[[ProgressEvent], None] | None, divisor: int) -> None:
        self.clock, self.deadline, self.limit = clock, deadline, iterations
        self.progress, self.divisor = progress, divisor
        self.iterations = 0
        self._last = 0.0

    def __call__(self, best_cost: float) -> bool:
        self.iterations += 1
        now = self.clock.elapsed
        if self.progress is not None and now - self._last >= 0.25:
            self._last = now
            found = math.isfinite(best_cost) and best_cost < _NO_COST
            self.progress(ProgressEvent(NAME, now, self.iterations,
                                        best_cost * self.divisor / 3_600_000 if found else None,
                                        "searching (objective includes unassigned prizes)"))
        return (now >= self.deadline or self.clock.budget.cancelled()
                or (self.limit is not None and self.iterations >= self.limit))


def plan_of(problem: VrpProblem, built: _Data, solution: Any) -> VrpPlan:
    """PyVRP's routes as the document's plan: each route's vehicle type to the next vehicle
    of that type, clients to jobs, shipment activities to pickups and deliveries."""
    free = [list(vs) for vs in built.type_vehicles]
    routes = []
    for route in solution.routes():
        vehicle = free[route.vehicle_type()].pop(0)
        steps = []
        for act in route:
            kind = int(act.type)
            if kind == 1:  # client
                ref = built.clients[act.idx]
            elif kind == 2:
                ref = TaskRef("pickup", act.idx)
            elif kind == 3:
                ref = TaskRef("delivery", act.idx)
            else:
                continue  # a depot
            steps.append(ref)
        routes.append(RoutePlan(vehicle, tuple(steps)))
    routes.sort(key=lambda r: r.vehicle_index)
    return complete_plan(problem, routes)


def start_solution(built: _Data, plan: VrpPlan) -> Any:
    """A plan as PyVRP's Solution (a warm start): each vehicle's steps as activities."""
    import pyvrp

    client_of: dict[TaskRef, int] = {}
    for c, ref in enumerate(built.clients):
        client_of.setdefault(ref, c)
    type_of = {v: t for t, vs in enumerate(built.type_vehicles) for v in vs}
    kinds = {"pickup": pyvrp.ActivityType.PICKUP, "delivery": pyvrp.ActivityType.DELIVERY}
    routes = []
    for r in plan.routes:
        acts = []
        for ref in r.steps:
            if ref.kind == "job":
                acts.append(pyvrp.Activity(pyvrp.ActivityType.CLIENT, client_of[ref]))
            elif ref.kind in kinds:
                acts.append(pyvrp.Activity(kinds[ref.kind], ref.index))
        if acts:
            routes.append(pyvrp.Route(built.data, acts, type_of[r.vehicle_index]))
    return pyvrp.Solution(built.data, routes)


def solve(problem: VrpProblem, budget: Budget, seed: int = 0,
          on_progress: Callable[[ProgressEvent], None] | None = None,
          initial: VrpPlan | None = None) -> VrpPlan:
    """PyVRP's iterated local search on ``problem`` until the time limit (6% and a little
    per task are kept for building the answer and checking it), the cancel flag, or
    ``budget.max_solutions`` iterations."""
    import pyvrp
    from pyvrp.exceptions import PenaltyBoundWarning

    clock = Clock(budget)
    warnings.filterwarnings("ignore", category=PenaltyBoundWarning)
    if not problem.jobs and not problem.shipments:
        return VrpPlan(())
    built = build(problem)
    deadline = budget.time_limit * 0.94 - 2e-5 * problem.task_count
    stop = _Stop(clock, deadline, budget.max_solutions, on_progress, built.divisor)
    initial = initial if initial is not None else starting_solution(problem)
    start = None
    if initial is not None:
        try:
            start = start_solution(built, initial)
        except (RuntimeError, ValueError, IndexError):
            start = None  # a start PyVRP refuses (too many routes of a type): its own
    default = pyvrp.PenaltyParams()
    penalty = pyvrp.PenaltyParams(max_penalty=max(default.max_penalty, 10.0 * built.prize))
    result = pyvrp.solve(built.data, stop=stop, seed=seed, collect_stats=False, display=False,
                         initial_solution=start, params=pyvrp.SolveParams(penalty=penalty))
    best = result.best
    if not best.is_feasible():
        # nothing feasible found in time: every task unassigned is a plan the checker passes,
        # and the reasons then say what each task lacks
        return complete_plan(problem, [])
    plan = plan_of(problem, built, best)
    if on_progress is not None:
        on_progress(ProgressEvent(NAME, clock.elapsed, stop.iterations,
                                  float(best.distance_cost() + best.fixed_vehicle_cost())
                                  * built.divisor / 3_600_000, "done"))
    return plan

