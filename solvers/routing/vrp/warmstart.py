"""Warm starts: re-plan from ``vehicles[].steps`` with the least change, and say what moved.

A running plan is the vehicles' ``steps``. The ``warmstart`` solver keeps it and changes it
as little as it can:

1. A starting route gets the breaks it lacks. One that breaks a rule (a new time window, a
   smaller vehicle) gives up its unpinned tasks one at a time, the one whose removal repairs
   most first, until it holds;
   pinned steps never leave their vehicle or change their order. A route whose pinned steps
   alone break a rule is an error naming the vehicle, not a plan moved behind the user's back.
2. Every task not in a route (new, or given up in 1) is inserted where it adds least cost
   (every position of every vehicle, an unused one included), higher priority first: tasks
   already planned keep their vehicle and their order; a shipment's pickup and delivery go
   in together. A route's breaks are placed when it gets its first task.
3. What cannot be inserted stays unassigned, with the checker's reason.

Every trial is the checker's own ``check_route``, so the plan respects every rule of the model
(skills, breaks, shipments, limits) with no solver-specific model. The answer's list of what
moved is ``plan.moved_tasks``, the same for every solver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from solvers.contract import Budget, Clock, ProgressEvent
from solvers.errors import NoSolutionError
from solvers.routing.vrp.check import RouteCheck, check_route
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.plan import RoutePlan, TaskRef, VrpPlan, complete_plan

NAME = "warmstart"
FEATURES = frozenset({"time_windows", "shipments", "skills", "breaks", "multi_depot",
                      "heterogeneous", "max_tasks", "max_travel_time", "max_distance",
                      "costs", "priority", "warm_start"})


def _ref(problem: VrpProblem, vehicle_index: int, kind: str, step_id: int) -> TaskRef:
    if kind == "job":
        return TaskRef("job", problem.job_index[step_id])
    if kind == "pickup":
        return TaskRef("pickup", problem.pickup_index[step_id])
    if kind == "delivery":
        return TaskRef("delivery", problem.delivery_index[step_id])
    breaks = problem.vehicles[vehicle_index].breaks
    return TaskRef("break", next(k for k, b in enumerate(breaks) if b.id == step_id))


def starting_routes(problem: VrpProblem) -> tuple[list[list[TaskRef]], set[TaskRef]]:
    """Each vehicle's starting steps as task references, and the pinned ones."""
    routes: list[list[TaskRef]] = []
    pinned: set[TaskRef] = set()
    for vi, v in enumerate(problem.vehicles):
        steps = []
        for s in v.steps:
            ref = _ref(problem, vi, s.type, s.id)
            steps.append(ref)
            if s.pinned and ref.kind != "break":
                pinned.add(ref)
        routes.append(steps)
    return routes, pinned


def starting_solution(problem: VrpProblem) -> VrpPlan | None:
    """The vehicles' steps as a plan (tasks only, no breaks), for solvers that take them as a
    starting solution without pinning; None when no vehicle has steps."""
    if not any(v.steps for v in problem.vehicles):
        return None
    routes, _ = starting_routes(problem)
    return VrpPlan(tuple(RoutePlan(vi, tuple(r for r in steps if r.kind != "break"))
                         for vi, steps in enumerate(routes)
                         if any(r.kind != "break" for r in steps)))


def refuse_pinned(problem: VrpProblem, solver: str) -> str | None:
    """The reason (naming the first pinned step) a solver that only starts from the steps
    cannot take a document that pins some; None when none is pinned."""
    for vi, v in enumerate(problem.vehicles):
        for k, s in enumerate(v.steps):
            if s.pinned:
                return (f"vehicles[{vi}].steps[{k}].pinned: {solver} starts from the steps "
                        "but may move them; the warmstart solver keeps pinned steps")
    return None


def supports(problem: VrpProblem) -> str | None:
    """Why ``warmstart`` cannot take ``problem``: it re-plans from a starting plan, so a
    document without any ``vehicles[].steps`` is for the other solvers."""
    if not any(v.steps for v in problem.vehicles):
        return ("vehicles[].steps: warmstart re-plans from the vehicles' steps and this "
                "document has none; use vroom, pyvrp or ortools")
    return None


def _partner(ref: TaskRef) -> TaskRef | None:
    if ref.kind == "pickup":
        return TaskRef("delivery", ref.index)
    if ref.kind == "delivery":
        return TaskRef("pickup", ref.index)
    return None


def _repair(problem: VrpProblem, vi: int, steps: list[TaskRef],
            pinned: set[TaskRef]) -> tuple[list[TaskRef], list[TaskRef]]:
    """The route without the unpinned tasks it must give up to hold, and those tasks."""
    given_up: list[TaskRef] = []
    steps = _with_breaks(problem, vi, steps) or steps
    check = check_route(problem, vi, steps, late_start=False)
    while check.violations:
        best: tuple[int, int, list[TaskRef], list[TaskRef]] | None = None
        for ref in steps:
            if ref.kind == "break" or ref in pinned:
                continue
            out = {ref, _partner(ref)} - {None}
            if out & pinned:
                continue
            trial = [s for s in steps if s not in out]
            c = check_route(problem, vi, trial, late_start=False)
            key = (len(c.violations), c.cost)
            if best is None or key < best[:2]:
                best = (*key, trial, [s for s in steps if s in out])
        if best is None:
            v = problem.vehicles[vi]
            raise NoSolutionError(
                f"vehicle {v.id}: its pinned steps alone break the rules: "
                + "; ".join(x.message for x in check.violations), field=f"vehicles[{vi}].steps",
                more_time_helps=False)
        steps, removed = best[2], best[3]
        given_up += [r for r in removed if r.kind != "delivery"]
        check = check_route(problem, vi, steps, late_start=False)
    return steps, given_up


def _with_breaks(problem: VrpProblem, vi: int, steps: list[TaskRef]) -> list[TaskRef] | None:
    """``steps`` with the vehicle's missing breaks each at its cheapest feasible place (None
    when one has none)."""
    have = {r.index for r in steps if r.kind == "break"}
    for b in range(len(problem.vehicles[vi].breaks)):
        if b in have:
            continue
        best: tuple[int, list[TaskRef]] | None = None
        for pos in range(len(steps) + 1):
            trial = [*steps[:pos], TaskRef("break", b), *steps[pos:]]
            c = check_route(problem, vi, trial, late_start=False)
            if not [x for x in c.violations if x.code != "break"] and (
                    best is None or c.cost < best[0]):
                best = (c.cost, trial)
        if best is None:
            return None
        steps = best[1]
    return steps


def _trials(steps: list[TaskRef], task: TaskRef) -> list[list[TaskRef]]:
    """Every way to put ``task`` (a job, or a shipment's pickup with its delivery after it)
    into ``steps`` without moving the others."""
    if task.kind == "job":
        return [[*steps[:p], task, *steps[p:]] for p in range(len(steps) + 1)]
    delivery = TaskRef("delivery", task.index)
    out = []
    for p in range(len(steps) + 1):
        first = [*steps[:p], task, *steps[p:]]
        out += [[*first[:d], delivery, *first[d:]] for d in range(p + 1, len(first) + 1)]
    return out


def _best_insertion(problem: VrpProblem, routes: list[list[TaskRef]], costs: list[int],
                    task: TaskRef, expired: Callable[[], bool]
                    ) -> tuple[int, int, list[TaskRef]] | None:
    """The cheapest feasible insertion of ``task``: (added cost, vehicle, new steps)."""
    best: tuple[int, int, list[TaskRef]] | None = None
    tried_empty: set[Any] = set()
    for vi, steps in enumerate(routes):
        if not any(r.kind != "break" for r in steps):
            v = problem.vehicles[vi]
            twin = (v.profile, v.start_index, v.end_index, v.capacity, v.skills, v.time_window,
                    v.breaks, v.max_tasks, v.max_travel_time, v.max_distance, v.costs,
                    v.speed_factor)
            if twin in tried_empty:
                continue  # an identical unused vehicle was tried already
            tried_empty.add(twin)
        for trial in _trials(steps, task):
            if expired():
                return best
            full = _with_breaks(problem, vi, trial)
            if full is None:
                continue
            c: RouteCheck = check_route(problem, vi, full, late_start=False)
            if c.violations:
                continue
            added = c.cost - costs[vi]
            if best is None or added < best[0]:
                best = (added, vi, full)
    return best


def _priority(problem: VrpProblem, ref: TaskRef) -> int:
    return (problem.jobs[ref.index] if ref.kind == "job" else problem.shipments[ref.index]
            ).priority


def solve(problem: VrpProblem, budget: Budget, seed: int = 0,
          on_progress: Callable[[ProgressEvent], None] | None = None) -> VrpPlan:
    """The starting plan repaired and completed with the least change (see the module's
    docstring); tasks still to insert when the time limit or the cancel flag comes stay
    unassigned. Deterministic: ``seed`` is unused."""
    del seed
    clock = Clock(budget)
    margin = min(0.5, 0.1 * budget.time_limit)

    def expired() -> bool:
        return clock.elapsed > budget.time_limit - margin or budget.cancelled()

    routes, pinned = starting_routes(problem)
    placed = {r for steps in routes for r in steps if r.kind != "break"}
    pool: list[TaskRef] = [TaskRef("job", j) for j in range(len(problem.jobs))
                           if TaskRef("job", j) not in placed]
    pool += [TaskRef("pickup", s) for s in range(len(problem.shipments))
             if TaskRef("pickup", s) not in placed]
    for vi, steps in enumerate(routes):
        if steps:
            routes[vi], given_up = _repair(problem, vi, steps, pinned)
            pool += given_up
    costs = [check_route(problem, vi, steps, late_start=False).cost
             for vi, steps in enumerate(routes)]
    pool.sort(key=lambda r: -_priority(problem, r))  # stable: document order within
    inserted = 0
    for task in pool:
        if expired():
            break
        best = _best_insertion(problem, routes, costs, task, expired)
        if best is None:
            continue
        added, vi, steps = best
        routes[vi] = steps
        costs[vi] += added
        inserted += 1
        if on_progress is not None:
            on_progress(ProgressEvent(NAME, clock.elapsed, inserted, float(sum(costs)),
                                      f"{inserted} of {len(pool)} tasks inserted"))
    return complete_plan(problem, [RoutePlan(vi, tuple(s)) for vi, s in enumerate(routes)
                                   if s])

