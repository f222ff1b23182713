"""The ``vroom`` solver: the VROOM engine through pyvroom (BSD), the baseline users of VROOM's
format compare against.

The model is handed to pyvroom's public classes (matrices per profile, jobs, shipments,
vehicles with their steps as a starting plan); VROOM's answer is read back as the order of
tasks per vehicle only. Its times are not kept: the checker recomputes the schedule, so a
difference between VROOM's arithmetic and ours shows as a failed check, not a wrong answer.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import numpy as np

from solvers.contract import Budget, Clock, ProgressCallback, ProgressEvent
from solvers.errors import InstanceTooLargeError, NoSolutionError
from solvers.routing.vrp.model import Vehicle, VrpProblem
from solvers.routing.vrp.plan import RoutePlan, TaskRef, VrpPlan, complete_plan

#: pyvroom takes matrices as uint32.
_MATRIX_LIMIT = 2**32 - 1
#: The threads VROOM may use: few, since the machine serves other requests too.
THREADS = 2
#: VROOM's exploration level (0 to 5, 5 its command line's default): the search's breadth;
#: the time limit cuts it short on large instances.
EXPLORATION = 5


def _windows(vroom: Any, windows: tuple[tuple[int, int], ...]) -> list[Any]:
    return [vroom.TimeWindow(s, e) for s, e in windows]


def _vehicle(vroom: Any, v: Vehicle, use_steps: bool) -> Any:
    """A pyvroom Vehicle; the starting plan's steps only when every vehicle has some or none
    has (VROOM then starts its search from them)."""
    kinds = {"job": "single", "pickup": "pickup", "delivery": "delivery", "break": "break"}
    steps = []
    if use_steps and v.steps:
        steps = ([vroom.VehicleStep("start")] if v.start_index is not None else []) + [
            vroom.VehicleStep(kinds[s.type], s.id) for s in v.steps] + (
            [vroom.VehicleStep("end")] if v.end_index is not None else [])
    kwargs: dict[str, Any] = {}
    if v.max_travel_time is not None:
        kwargs["max_travel_time"] = v.max_travel_time
    if v.max_distance is not None:
        kwargs["max_distance"] = v.max_distance
    if v.max_tasks is not None:
        kwargs["max_tasks"] = v.max_tasks
    if v.time_window is not None:
        kwargs["time_window"] = vroom.TimeWindow(*v.time_window)
    return vroom.Vehicle(
        v.id, start=v.start_index, end=v.end_index, profile=v.profile,
        capacity=list(v.capacity), skills=set(v.skills),
        breaks=[vroom.Break(b.id, _windows(vroom, b.time_windows) or [vroom.TimeWindow()],
                            b.service,
                            max_load=None if b.max_load is None else list(b.max_load))
                for b in v.breaks],
        costs=vroom.VehicleCosts(v.costs.fixed, v.costs.per_hour, v.costs.per_km),
        speed_factor=v.speed_factor, steps=steps, **kwargs)


def build_input(problem: VrpProblem, use_steps: bool = True) -> Any:
    """The problem as a pyvroom ``Input``."""
    import vroom

    data = vroom.Input()
    for profile, m in problem.matrices.items():
        for name, matrix in (("durations", m.durations), ("distances", m.distances),
                             ("costs", m.costs)):
            if matrix is None:
                continue
            if matrix.size and int(matrix.max()) > _MATRIX_LIMIT:
                raise InstanceTooLargeError(
                    f"matrices.{profile}.{name} has entries above {_MATRIX_LIMIT}, the "
                    "largest the vroom solver takes", int(matrix.max()), _MATRIX_LIMIT,
                    unit="matrix entry", field="solver")
            getattr(data, f"set_{name}_matrix")(profile, np.asarray(matrix, dtype=np.uint32))
    for j in problem.jobs:
        data.add_job(vroom.Job(
            j.id, j.location_index, default_setup=j.setup, default_service=j.service,
            delivery=list(j.delivery), pickup=list(j.pickup), skills=set(j.skills),
            priority=j.priority, time_windows=_windows(vroom, j.time_windows)))
    for s in problem.shipments:
        halves = [vroom.ShipmentStep(h.id, h.location_index, default_setup=h.setup,
                                     default_service=h.service,
                                     time_windows=_windows(vroom, h.time_windows))
                  for h in (s.pickup, s.delivery)]
        data.add_job(vroom.Shipment(halves[0], halves[1], amount=list(s.amount),
                                    skills=set(s.skills), priority=s.priority))
    with_steps = use_steps and any(v.steps for v in problem.vehicles)
    for v in problem.vehicles:
        data.add_vehicle(_vehicle(vroom, v, with_steps))
    return data


def plan_from_output(problem: VrpProblem, output: dict[str, Any]) -> VrpPlan:
    """The order of tasks per vehicle in a VROOM output document (its times ignored)."""
    lookup = {"job": problem.job_index, "pickup": problem.pickup_index,
              "delivery": problem.delivery_index}
    routes = []
    for route in output.get("routes", []):
        v = problem.vehicle_index[int(route["vehicle"])]
        breaks = {b.id: k for k, b in enumerate(problem.vehicles[v].breaks)}
        steps = []
        for step in route["steps"]:
            kind = step["type"]
            if kind in lookup:
                steps.append(TaskRef(kind, lookup[kind][int(step["id"])]))
            elif kind == "break":
                steps.append(TaskRef("break", breaks[int(step["id"])]))
        routes.append(RoutePlan(v, tuple(steps)))
    return complete_plan(problem, routes)


def supports(problem: VrpProblem) -> str | None:
    """VROOM has no pinned steps: it would move them, and the check would refuse its plan."""
    for v, vehicle in enumerate(problem.vehicles):
        for k, step in enumerate(vehicle.steps):
            if step.pinned:
                return (f"vehicles[{v}].steps[{k}].pinned: VROOM cannot keep steps pinned; "
                        "the warmstart solver does")
    return None


def _run(data: Any, budget: Budget) -> dict[str, Any]:
    timeout = None if math.isinf(budget.time_limit) else timedelta(seconds=budget.time_limit)
    solution = data.solve(exploration_level=EXPLORATION, nb_threads=THREADS, timeout=timeout)
    return solution.to_dict()


def solve_vroom(problem: VrpProblem, budget: Budget, seed: int = 0,
                on_progress: ProgressCallback | None = None) -> VrpPlan:
    """Solve with VROOM within the budget's time limit (VROOM's own timeout; it cannot be
    cancelled midway, and takes no seed: its search is deterministic for a thread count).
    A starting plan VROOM refuses as invalid (VROOM requires it to be feasible) is dropped
    and the search starts afresh."""
    clock = Clock(budget)
    try:
        output = _run(build_input(problem), budget)
    except Exception as err:  # pyvroom raises VROOM's C++ errors as plain exceptions
        if not any(v.steps for v in problem.vehicles):
            raise NoSolutionError(f"vroom failed: {err}", field="solver",
                                  more_time_helps=False) from err
        remaining = max(clock.remaining, 0.1 * budget.time_limit)
        try:
            output = _run(build_input(problem, use_steps=False), Budget(time_limit=remaining))
        except Exception as again:
            raise NoSolutionError(f"vroom failed: {again}", field="solver",
                                  more_time_helps=False) from again
    if on_progress is not None:
        cost = output.get("summary", {}).get("cost")
        on_progress(ProgressEvent("vroom", clock.elapsed, 1,
                                  None if cost is None else float(cost), "vroom finished"))
    return plan_from_output(problem, output)
